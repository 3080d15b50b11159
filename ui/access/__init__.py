"""Who is asking and how much they may ask: the viewer behind each event, logins, the
anonymous visitor cookie, and per-client limits on events and uploads."""

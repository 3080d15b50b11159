"""Work kept across a reload, per browser: the reward design, the Train form, chart settings
and the open tab, in the browser's own storage, and the last preview while the server still
keeps it (the browser holds only its token). Only the user's form values are kept, never
anything that names the visitor (they are known by the server's HttpOnly cookie), and every
stored value is validated again on restore like any input."""

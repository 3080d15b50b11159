"""An HTTP request as an ASGI server hands it to the app, and a recorder of the reply: for
driving the access middlewares in-process."""

from __future__ import annotations


def http_scope(
    path: str, headers: list[tuple[bytes, bytes]] = (), address: str = "10.0.0.1"
) -> dict:
    """The scope of a ``GET path`` from ``address`` to the app's own host."""
    return {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"studio.example"), *headers],
        "client": (address, 5000),
    }


class Reply:
    """What the app sent back (``sent``), with a client that has nothing more to say."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    async def send(self, message: dict) -> None:
        self.sent.append(message)

    async def receive(self) -> dict:
        return {"type": "http.disconnect"}

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

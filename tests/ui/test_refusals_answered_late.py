"""A refusal a flood could repeat for free is answered only after ``REFUSAL_DELAY_S``, so a
client that retries at once is held to one request per connection and delay (bench/flood.py's
dev-reload flood sent 62,491 instant 404s in a minute). The middleware stack the app runs,
driven in-process as an ASGI server drives it; the app behind it is never reached."""

from __future__ import annotations

import asyncio

import pytest

from tests.ui.asgi_scope import Reply, http_scope
from tests.ui.fresh_loop import run_in_fresh_loop
from ui.access.same_origin import REFUSAL_DELAY_S, CrossSiteShield
from ui.access.visitor_cookie import VisitorCookies


async def unreachable(scope, receive, send):
    raise AssertionError(f"the app was reached for {scope['path']}")


STACK = CrossSiteShield(VisitorCookies(unreachable, secret=b"k" * 32, closed=("/gradio_api/dev",)))


@pytest.mark.parametrize(
    ("path", "headers", "status"),
    [
        ("/gradio_api/dev/reload", [], 404),  # closed on a public app
        ("/gradio_api/deep_link", [], 404),
        ("/gradio_api/run-history/buckets", [], 404),  # a route using the server's credential
        ("/config", [(b"origin", b"https://other.example")], 403),  # another site's page
    ],
)
def test_a_refusal_is_answered_only_after_the_delay(path, headers, status):
    reply = Reply()

    async def probe() -> list[dict]:
        answering = asyncio.create_task(STACK(http_scope(path, headers), reply.receive, reply.send))
        await asyncio.sleep(REFUSAL_DELAY_S / 2)  # the same loop: cannot outrun the delay
        early = list(reply.sent)
        await answering
        return early

    early = run_in_fresh_loop(probe())
    assert early == []
    assert reply.status == status

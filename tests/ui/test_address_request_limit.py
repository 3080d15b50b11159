"""Every route is held to :data:`ADDRESS_REQUESTS_PER_S` requests a second per address, in
bursts of :data:`ADDRESS_REQUEST_BURST`: a flood of cheap pages, each minting a new visitor
cookie, took another visitor's page load to 3.2 s (bench/flood.py's cookies mode). The limits
middleware the app runs, driven in-process as an ASGI server drives it."""

from __future__ import annotations

import asyncio

from tests.ui.asgi_scope import Reply, http_scope
from tests.ui.fresh_loop import run_in_fresh_loop
from ui.access.client_limits import ADDRESS_REQUEST_BURST, ClientLimits


async def page(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def status(limits: ClientLimits, address: str) -> int:
    reply = Reply()
    await limits(http_scope("/theme.css", address=address), reply.receive, reply.send)
    return reply.status


def test_one_address_past_its_burst_is_refused_and_another_is_not():
    limits = ClientLimits(page)
    flood = ADDRESS_REQUEST_BURST + 200

    async def probe() -> tuple[list[int], int]:
        codes = await asyncio.gather(*(status(limits, "203.0.113.7") for _ in range(flood)))
        return list(codes), await status(limits, "203.0.113.8")

    codes, other = run_in_fresh_loop(probe())
    assert codes[:ADDRESS_REQUEST_BURST] == [200] * ADDRESS_REQUEST_BURST
    assert codes.count(429) >= 100, codes.count(429)
    assert other == 200

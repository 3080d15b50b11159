"""Uploads cannot be blocked for everyone: declared lengths that never arrive take no space,
an aborted upload's temp file is swept, and one address holds a bounded share however many
cookies it takes. Real sockets against a running public app; addresses are told apart by
``X-Forwarded-For``, which the app reads from a proxy on its own machine, as behind a Space's.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

pytestmark = pytest.mark.reliability

MB = 2**20
ENV = {
    "STUDIO_PUBLIC": "1",
    "STUDIO_MAX_UPLOAD_MB": "4",
    "STUDIO_MAX_CLIENT_UPLOADS_MB": "8",
    "STUDIO_MAX_GRADIO_UPLOADS_MB": "16",  # a share of 16 / 8 = 2 MiB per address
    "STUDIO_UPLOAD_STALE_S": "2",
}
BOUNDARY = "studioboundary"


def multipart(name: str, size: int) -> tuple[bytes, bytes]:
    """``(head, tail)`` of a one-file multipart body around ``size`` bytes of content."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    return head, f"\r\n--{BOUNDARY}--\r\n".encode()


def open_upload(url: str, address: str, size: int, send: int) -> socket.socket:
    """A socket that declared an upload of ``size`` bytes and sent ``send`` of them."""
    parts = urlsplit(url)
    head, tail = multipart("held.jsonl", size)
    sock = socket.create_connection((parts.hostname, parts.port))
    sock.sendall(
        (
            f"POST /gradio_api/upload HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"X-Forwarded-For: {address}\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            f"Content-Length: {len(head) + size + len(tail)}\r\n\r\n"
        ).encode()
        + head
        + b"x" * send
    )
    return sock


def upload(url: str, address: str, size: int, cookie: bool = True) -> int:
    with httpx.Client(base_url=url, timeout=30) as http:
        if cookie:
            http.get("/config", headers={"X-Forwarded-For": address})  # a fresh visitor
        response = http.post(
            "/gradio_api/upload",
            files={"files": ("data.jsonl", b"x" * size)},
            headers={"X-Forwarded-For": address},
        )
        return response.status_code


def big_temp_files() -> set[Path]:
    return {p for p in Path(tempfile.gettempdir()).glob("tmp*") if _size(p) >= MB // 4}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0


@pytest.fixture(scope="module")
def app(tmp_path_factory, start_app):
    root = tmp_path_factory.mktemp("uploads")
    data_dir = root / "data"
    data_dir.mkdir()
    # Gradio's upload folder of this app alone (by default one /tmp/gradio for every app).
    with start_app(data_dir, {**ENV, "GRADIO_TEMP_DIR": str(root / "gradio")}) as app:
        yield app


def test_an_aborted_uploads_temp_file_is_swept(app):  # first: the app holds nothing yet
    before = big_temp_files()
    sock = open_upload(app.url, "10.0.2.1", 2 * MB - 1024, MB + MB // 2)
    time.sleep(2.0)
    sock.close()  # the client goes away mid-upload
    digest = hashlib.sha256(str(app.data_dir.resolve()).encode()).hexdigest()[:12]
    incoming = Path(tempfile.gettempdir()) / f"studio-incoming-{digest}"
    time.sleep(4.5)  # past the stale age and the sweep interval
    assert upload(app.url, "10.0.2.2", 20) == 200  # an upload runs the sweep
    time.sleep(0.5)
    left = [p for p in incoming.glob("*") if _size(p) >= MB // 4] if incoming.is_dir() else []
    orphans = big_temp_files() - before
    assert not left and not orphans, (left, orphans)


def test_declared_lengths_that_never_arrive_block_no_one(app):
    with contextlib.ExitStack() as held:
        for i in range(9):  # 9 addresses x 2 MiB declared: more than the 16 MiB
            held.callback(open_upload(app.url, f"10.0.0.{i + 1}", 2 * MB - 1024, 0).close)
        time.sleep(0.2)
        assert upload(app.url, "10.0.1.1", 64 * 1024, cookie=False) == 200


def test_one_address_holds_one_share_however_many_cookies_it_takes(app):
    codes = [upload(app.url, "10.0.3.1", MB // 2) for _ in range(6)]  # 3 MiB, new cookie each
    assert codes[:3] == [200, 200, 200], codes
    assert codes[-1] == 413, codes
    assert upload(app.url, "10.0.3.2", 20) == 200  # another address is not refused

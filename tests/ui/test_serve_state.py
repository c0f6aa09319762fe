"""Security state is not cache (vitviz.ledger): per-address rate buckets, upload budgets and recent use
live in their own bounded ledgers, where an entry still in force is never evicted -- filling the view cache
once evicted an address's upload budget, and an over-budget 100 MB upload was then accepted."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from vitviz import ledger
from vitviz.ui.serve import http, limits, uploads

ROOT = Path(__file__).resolve().parents[2]
PHOTO = (ROOT / "assets" / "examples" / "chelsea.jpg").read_bytes()
MB = 1_000_000


UPLOAD_SCOPE = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "client": ("10.0.0.9", 1),
                "headers": [(b"content-type", b"multipart/form-data; boundary=b")]}


def _upload(data: bytes, address: str, name: bytes = b"photo.jpg") -> int:
    """The door's answer to one upload of ``data`` from ``address`` (200: passed on to Gradio)."""
    body = (b'--b\r\nContent-Disposition: form-data; name="files"; filename="' + name +
            b'"\r\nContent-Type: image/jpeg\r\n\r\n' + data + b"\r\n--b--\r\n")
    scope = {**UPLOAD_SCOPE, "headers": UPLOAD_SCOPE["headers"] + [(b"content-length", str(len(body)).encode())]}
    pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)]

    async def receive():  # noqa: ANN202
        return {"type": "http.request", "body": pieces.pop(0), "more_body": len(pieces) > 1}

    async def drain() -> int:
        try:
            wrapped = uploads.checked_upload(scope, receive, address, False)
            while (await wrapped()).get("more_body"):
                pass
            return 200
        except uploads.RefusedUpload as refused:
            return refused.status

    return asyncio.run(drain())


def test_an_api_client_sending_the_same_photo_500_times_is_never_refused(monkeypatch):
    """gradio_client uploads the file again for every call; Gradio stores it at one path (its content and name),
    so it takes no more disk, and VITVIZ_CLIENT_FILES (200) counts distinct files."""
    monkeypatch.setattr(uploads, "BUDGET", ledger.DiskBudget())
    outcomes = [_upload(PHOTO, "203.0.113.20") for _ in range(500)]
    assert outcomes == [200] * 500
    monkeypatch.setenv("VITVIZ_CLIENT_FILES", "3")
    distinct = [_upload(PHOTO + bytes([i]), "203.0.113.21") for i in range(4)]
    assert distinct == [200, 200, 200, 429]  # distinct files are still counted
    assert _upload(PHOTO, "203.0.113.22", b"a.jpg") == 200
    assert _upload(PHOTO, "203.0.113.22", b"b.jpg") == 200  # another name is another file on disk
    assert _upload(PHOTO, "203.0.113.22", b"c.jpg") == 200
    assert _upload(PHOTO, "203.0.113.22", b"d.jpg") == 429


def test_vitviz_max_sessions_holds_on_the_launched_app(monkeypatch):
    """serve.install set the capacity, and Blocks.launch then put back its own default of 10,000."""
    gr = pytest.importorskip("gradio")
    from tools.appserver import free_port
    from vitviz.ui import launch_options

    monkeypatch.setenv("VITVIZ_MAX_SESSIONS", "37")
    options = launch_options()
    assert options["state_session_capacity"] == 37
    with gr.Blocks() as demo:
        gr.Number()
    options.update(server_port=free_port(), server_name="127.0.0.1", prevent_thread_lock=True, quiet=True,
                   app_kwargs={})  # the door is not under test here
    demo.launch(**options)
    try:
        assert demo.state_session_capacity == 37
    finally:
        demo.close()


@pytest.mark.parametrize("public,expected", [("1", 300), ("0", 1000)])
def test_a_public_host_keeps_three_hundred_sessions_by_default(monkeypatch, public, expected):
    """Each kept session costs about 60 kB: a public host's memory stops growing at 300 of them."""
    from vitviz.ui import launch_options

    monkeypatch.delenv("VITVIZ_MAX_SESSIONS", raising=False)
    monkeypatch.setenv("VITVIZ_PUBLIC", public)
    assert launch_options()["state_session_capacity"] == expected


def _scoped(peer: str, xff: str | None) -> SimpleNamespace:
    headers = {"x-forwarded-for": xff} if xff is not None else {}
    return SimpleNamespace(client=SimpleNamespace(host=peer), headers=headers)


def test_only_the_socket_peer_may_be_exempt_as_loopback():
    """Behind a trusted proxy, an X-Forwarded-For whose last hop was 127.0.0.1 exempted a remote caller from every
    per-address cap (10 of 10 heavy joins against a cap of 3)."""
    for hop in ("127.0.0.1", "::1", "127.9.9.9", "0.0.0.0"):
        address = limits.client_address(_scoped("10.20.30.40", f"6.6.6.6, {hop}"), 1)
        assert not limits.exempt(address), hop
    assert limits.exempt(limits.client_address(_scoped("127.0.0.1", None), 1))  # the machine's own user
    assert limits.exempt(limits.client_address(_scoped("127.0.0.1", "x"), 1))  # a malformed hop: the peer
    assert limits.client_address(_scoped("10.20.30.40", "6.6.6.6, 1.2.3.4"), 1) == "1.2.3.4"


def test_a_session_id_longer_than_128_characters_is_refused(monkeypatch):
    async def no_pause(seconds: float) -> None:
        return None

    monkeypatch.setattr(http.asyncio, "sleep", no_pause)
    monkeypatch.setattr(http, "JOINS", limits.Joins())
    sent: list[dict] = []

    async def app(scope, receive, send):  # noqa: ANN001, ANN202
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'{"event_id": "e1"}'})

    async def send(message: dict) -> None:
        sent.append(message)

    def join(session: str) -> int:
        body = json.dumps({"fn_index": 0, "data": [1], "session_hash": session}).encode()

        async def receive() -> dict:
            return {"type": "http.request", "body": body, "more_body": False}

        sent.clear()
        scope = {"type": "http", "method": "POST", "path": "/gradio_api/queue/join", "client": ("203.0.113.70", 1),
                 "headers": [], "query_string": b""}
        asyncio.run(http.Hardening(app)(scope, receive, send))
        return sent[0]["status"]

    assert join("a" * 128) == 200 and join("a" * 129) == 400

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    for session, status in (("b" * 200, 400), ("b" * 20, 200)):
        sent.clear()
        scope = {"type": "http", "method": "GET", "path": "/gradio_api/queue/data", "client": ("203.0.113.70", 1),
                 "headers": [], "query_string": f"session_hash={session}".encode()}
        asyncio.run(http.Hardening(app)(scope, receive, send))
        assert sent[0]["status"] == status


def test_gradio_client_calling_with_the_same_photo_is_not_refused(monkeypatch):
    """A real gradio_client, which uploads the file again for every call, through the door (as a remote
    address, named by a trusted proxy's X-Forwarded-For), with VITVIZ_CLIENT_FILES=3 and VITVIZ_CLIENT_REQUESTS=10
    (bursts of 10, then one upload every 6 s): 40 calls back to back all answered, since the same file again
    counts against neither; distinct files from that address are still refused past the burst."""
    gr = pytest.importorskip("gradio")
    client_module = pytest.importorskip("gradio_client")
    import httpx

    from tools.appserver import free_port
    from vitviz.ui import serve

    monkeypatch.setenv("VITVIZ_CLIENT_FILES", "3")
    monkeypatch.setenv("VITVIZ_CLIENT_REQUESTS", "10")
    monkeypatch.setenv("VITVIZ_TRUSTED_PROXIES", "1")
    monkeypatch.setattr(uploads, "BUDGET", ledger.DiskBudget())
    monkeypatch.setattr(http, "LIMITER", http.RateLimiter())

    def size(image: str) -> str:
        from PIL import Image

        return "x".join(map(str, Image.open(image).size))

    with gr.Blocks() as demo:
        image, out = gr.Image(type="filepath"), gr.Textbox()
        gr.Button().click(size, image, out, api_name="size", api_visibility="public")
    demo.queue()
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                app_kwargs={"middleware": serve.middleware()[:1]})  # the door (http.Hardening) only
    try:
        client = client_module.Client(f"http://127.0.0.1:{port}/", headers={"X-Forwarded-For": "203.0.113.99"},
                                      verbose=False)
        photo = str(ROOT / "assets" / "examples" / "chelsea.jpg")
        answers = [client.predict(client_module.handle_file(photo), api_name="/size") for _ in range(40)]
        assert answers == [answers[0]] * 40 and "x" in answers[0]
        monkeypatch.setenv("VITVIZ_CLIENT_FILES", "100")
        statuses = [httpx.post(f"http://127.0.0.1:{port}/gradio_api/upload", timeout=60,
                               files={"files": (f"p{i}.jpg", PHOTO + bytes([i]))},
                               headers={"X-Forwarded-For": "203.0.113.99"}).status_code for i in range(12)]
        assert 429 in statuses  # new files still take from the address's rate
    finally:
        demo.close()

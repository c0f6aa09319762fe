"""Issue 32 at the door (vitviz.ui.serve.http, .uploads): bodies capped, uploads parsed the way Gradio parses
them, a disk budget per address, static files once whatever the query string, and a fair queue."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from vitviz import ledger
from vitviz.ui.serve import http, pageconfig, uploads

ROOT = Path(__file__).resolve().parents[2]
PHOTO = (ROOT / "assets" / "examples" / "chelsea.jpg").read_bytes()
UPLOAD_SCOPE = {"type": "http", "method": "POST", "path": "/gradio_api/upload", "client": ("10.0.0.9", 1),
                "headers": [(b"content-type", b"multipart/form-data; boundary=b")]}


def _part(data: bytes, disposition: bytes = b'form-data; name="files"; filename="x.png"') -> bytes:
    return b"--b\r\nContent-Disposition: " + disposition + b"\r\nContent-Type: image/png\r\n\r\n" + data + b"\r\n"


def _body(*parts: bytes) -> bytes:
    return b"".join(parts) + b"--b--\r\n"


def _outcome(data: bytes, chunk: int = 1 << 20, address: str = "10.0.0.9", exempt: bool = True,
             scope: dict | None = None) -> int:
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] or [b""]

    async def receive():  # noqa: ANN202
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    async def drain() -> int:
        try:
            wrapped = uploads.checked_upload(scope or UPLOAD_SCOPE, receive, address, exempt)
            while True:
                if not (await wrapped()).get("more_body"):
                    return 200
        except uploads.RefusedUpload as refused:
            return refused.status

    return asyncio.run(drain())


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_the_upload_check_reads_a_body_in_any_chunks(chunk):
    assert _outcome(_body(_part(PHOTO)), chunk) == 200
    assert _outcome(_body(_part(b"GIF89a" + b"\0" * 20)), chunk) == 200
    assert _outcome(_body(_part(b"just some text in a .png")), chunk) == 415
    assert _outcome(_body(_part(b"")), chunk) == 415
    assert _outcome(_body(_part(PHOTO), _part(PHOTO)), chunk) == 400


def test_a_video_for_the_live_section_passes_the_door_and_other_files_still_do_not(tmp_path):
    pytest.importorskip("av")
    from vitviz.core.video import write_video

    frames = [np.full((32, 48, 3), i * 40, dtype=np.uint8) for i in range(3)]
    for name, codec in (("v.mp4", "mpeg4"), ("v.webm", "libvpx"), ("v.avi", "mpeg4"), ("v.mkv", "mpeg4")):
        data = write_video(tmp_path / name, frames, fps=5, codec=codec).read_bytes()
        assert _outcome(_body(_part(data))) == 200, name
    assert _outcome(_body(_part(b"RIFF\0\0\0\0WAVEfmt "))) == 415  # a RIFF that is neither WebP nor AVI
    assert "MP4" in uploads.NOT_AN_IMAGE


@pytest.mark.parametrize("disposition", [b"form-data; name=files; filename=x.png",
                                         b'FORM-DATA; NAME="files"; FILENAME="x.png"',
                                         b"form-data; name=other; filename=y.bin"])
def test_a_second_file_is_refused_however_its_header_is_written(disposition):
    """Row 6 of issue 32: ``name=files`` unquoted or in another case is a file to Gradio's parser too."""
    assert _outcome(_body(_part(PHOTO), _part(b"\0" * 5000, disposition))) == 400
    # a file part under another name would be written to disk by Gradio and never cleaned
    if b"other" in disposition:
        assert _outcome(_body(_part(PHOTO, disposition))) == 400
    else:  # the one file, in any spelling Gradio accepts, is fine when it is an image
        assert _outcome(_body(_part(PHOTO, disposition))) == 200
        assert _outcome(_body(_part(b"not an image at all", disposition))) == 415


def test_an_upload_larger_than_the_largest_image_is_refused(monkeypatch):
    monkeypatch.setenv("VITVIZ_MAX_UPLOAD", "100kb")
    big = _body(_part(b"\xff\xd8\xff" + b"\0" * 300_000))
    assert _outcome(big, chunk=65536) == 413
    declared = dict(UPLOAD_SCOPE, headers=UPLOAD_SCOPE["headers"] + [(b"content-length", str(len(big)).encode())])
    assert _outcome(big, scope=declared) == 413


def test_each_address_has_a_disk_budget(monkeypatch):
    """Row 7: uploads within the rules at the allowed rate could fill a Space's disk in minutes."""
    monkeypatch.setenv("VITVIZ_CLIENT_FILES", "3")
    monkeypatch.setattr(uploads, "BUDGET", ledger.DiskBudget())
    photos = [_body(_part(PHOTO + bytes([i]))) for i in range(4)]  # four different files
    assert [_outcome(photo, address="10.7.7.7", exempt=False) for photo in photos] == [200, 200, 200, 429]
    assert _outcome(photos[0], address="10.7.7.8", exempt=False) == 200  # another visitor is not affected
    monkeypatch.setenv("VITVIZ_CLIENT_UPLOAD", "1mb")
    budget = ledger.DiskBudget()
    assert budget.refusal("a", 600_000, now=0.0) is None
    assert budget.refusal("a", 600_000, now=1.0) == ledger.OVER_BUDGET
    assert budget.refusal("a", 600_000, now=10_000.0) is None  # the first upload was cleaned by then
    monkeypatch.setenv("VITVIZ_UPLOAD_DISK", "1mb")
    assert budget.refusal("b", 600_000, now=10_001.0) == ledger.DISK_FULL


def _through_door(body: bytes, path: str = "/gradio_api/queue/join", declared: bool = True,
                  fns: dict | None = None) -> tuple[int, int]:
    """(status, bytes the app read) for ``body`` sent through :class:`http.Hardening`."""
    read = [0]

    async def app(scope, receive, send):  # noqa: ANN001, ANN202 - reads the whole body, like FastAPI
        while True:
            message = await receive()
            read[0] += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)] or [b""]
    sent: list[dict] = []

    async def receive():  # noqa: ANN202
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    async def send(message):  # noqa: ANN001, ANN202
        sent.append(message)

    headers = [(b"content-type", b"application/json")]
    if declared:
        headers.append((b"content-length", str(len(body)).encode()))
    scope = {"type": "http", "method": "POST", "path": path, "client": ("127.0.0.1", 1), "headers": headers}
    if fns is not None:  # the Gradio app the door stands in front of: its events by fn_index
        blocks = SimpleNamespace(fns=fns)
        scope["app"] = SimpleNamespace(get_blocks=lambda: blocks)
    asyncio.run(http.Hardening(app)(scope, receive, send))
    return sent[0]["status"], read[0]


def test_request_bodies_are_capped_before_they_are_read():
    """Row 4: a queue join with a 200 MB string kept 404 MB; a join needs kilobytes."""
    assert _through_door(b'{"data": [1]}') == (200, 13)
    status, read = _through_door(b'{"data": ["' + b"x" * 5_000_000 + b'"]}')
    assert status == 413 and read == 0  # refused from its declared length, nothing read
    status, read = _through_door(b'{"data": ["' + b"x" * 5_000_000 + b'"]}', declared=False)
    assert status == 413 and read < 200_000  # without a length: cut as soon as it passes the cap


def test_a_live_frame_may_be_larger_than_other_requests_but_is_capped_too():
    """A 320x240 camera frame is 30-80 KB as sent: the join that opens a stream (its first frame rides in it, a
    data URL) and each next frame may reach VITVIZ_MAX_FRAME (256 KB); any other join keeps the 64 KB cap, and
    nothing passes 256 KB."""
    frame = b"x" * 100_000

    def join(index: int, data: bytes = frame, declared: bool = True) -> int:
        picture = b"data:image/jpeg;base64," if index == 3 else b""
        body = b'{"fn_index": ' + str(index).encode() + b', "data": ["' + picture + data + b'"]}'
        return _through_door(body, declared=declared)[0]

    assert join(3) == 200 and join(3, declared=False) == 200  # opens a stream: its first frame rides in it
    assert join(4) == 413 and join(4, declared=False) == 413  # any other join: 64 KB
    assert join(3, b"x" * 300_000) == 413 and join(3, b"x" * 300_000, declared=False) == 413
    assert join(4, b"x" * 1000) == 200
    chunk = b'{"data": ["' + frame + b'"]}'
    assert _through_door(chunk, path="/gradio_api/stream/" + "ab12" * 8)[0] == 200  # a stream's next frame
    assert _through_door(b"x" * 300_000, path="/gradio_api/stream/" + "ab12" * 8)[0] == 413
    assert _through_door(chunk, path="/gradio_api/stream/" + "ab12" * 8 + "/close")[0] == 413


def test_a_static_file_is_fetched_and_compressed_once_whatever_the_query_string():
    """Row 8: a new query string per request cost a Brotli compression (0.4 s on the event loop) and an entry."""
    import brotli

    script = b"console.log('vitviz');\n" * 400
    calls: list[bytes] = []

    async def app(scope, receive, send):  # noqa: ANN001, ANN202
        calls.append(scope["query_string"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/javascript")]})
        await send({"type": "http.response.body", "body": script})

    cache = http.StaticCache(app)

    async def get(query: bytes, host: bytes = b"a", path: str = "/assets/PlotlyPlot-x.js") -> bytes:
        sent: list[dict] = []

        async def send(message):  # noqa: ANN001, ANN202
            sent.append(message)

        await cache({"type": "http", "method": "GET", "path": path, "query_string": query,
                     "headers": [(b"accept-encoding", b"br"), (b"host", host)]}, None, send)
        return b"".join(m.get("body", b"") for m in sent[1:])

    async def run() -> None:
        bodies = await asyncio.gather(*(get(f"v={i}".encode()) for i in range(40)))
        assert all(brotli.decompress(b) == script for b in bodies)
        for i in range(50):  # the page per Host header: a bounded number kept
            await get(b"", host=f"h{i}".encode(), path="/")

    asyncio.run(run())
    assert calls[0] == b"" and len(calls) == 1 + 50  # one fetch for 40 concurrent query strings
    assert len(cache.responses) == 1 and len(cache.pages) <= 8


def test_the_page_module_is_a_file_and_the_page_names_it_before_gradios_code():
    """Issue 32: the page module (35 KB) went inline in every /config and page; now a cached file, its tag
    written into the page's head so it runs before Gradio's deferred module script, as inline ``head`` did."""
    from vitviz.ui import js

    page = b"<html><head><script>window.gradio_config = {}</script><script type=module src=x></script></head></html>"

    async def app(scope, receive, send):  # noqa: ANN001, ANN202
        body = page if scope["path"] == "/" else b"{}"
        kind = b"text/html; charset=utf-8" if scope["path"] == "/" else b"application/json"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", kind), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body[:20], "more_body": True})
        await send({"type": "http.response.body", "body": body[20:]})

    def get(path: str) -> tuple[dict, bytes]:
        sent: list[dict] = []

        async def send(message):  # noqa: ANN001, ANN202
            sent.append(message)

        asyncio.run(pageconfig.PageConfig(app)({"type": "http", "method": "GET", "path": path, "headers": []}, None, send))
        return dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])

    headers, body = get("/")
    tag = js.module_tag().encode()
    assert body.count(tag) == 1 and body.index(tag) < body.index(b"</head>")
    assert headers[b"content-length"] == str(len(body)).encode()
    headers, body = get("/vitviz/" + js.module_file())
    assert body.decode() == js.module() and b"immutable" in headers[b"cache-control"]
    assert get("/config")[1] == b"{}"  # anything else passes unchanged
    assert "head" not in js.page(inline=False) and js.page(inline=False)["js"] == js.page()["js"]


def test_one_address_fetches_the_front_ends_files_at_a_bounded_rate(monkeypatch):  # noqa: ANN001
    """Row 8: a script asking for Plotly's bundle with a new query string each time was answered as fast as it
    asked (1.1 MB each, sent by the event loop every visitor shares). Two first visits' worth pass at once;
    then that address waits and gets 429; other addresses, other paths and the machine's own user do not."""
    monkeypatch.setattr(http, "ASSETS", ledger.RateLimiter())
    monkeypatch.setattr(http, "ASSETS_PER_MINUTE", 12)
    slept: list[float] = []

    async def no_sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(http.asyncio, "sleep", no_sleep)

    async def app(scope, receive, send):  # noqa: ANN001, ANN202
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"js"})

    def get(path: str, address: str) -> int:
        sent: list[dict] = []

        async def send(message):  # noqa: ANN001, ANN202
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": path, "query_string": b"v=1", "client": (address, 1),
                 "headers": []}
        asyncio.run(http.Hardening(app)(scope, None, send))
        return sent[0]["status"]

    assert [get("/assets/PlotlyPlot-x.js", "10.8.0.1") for _ in range(12)] == [200] * 12
    assert get("/assets/PlotlyPlot-x.js", "10.8.0.1") == 429 and slept == [http.REFUSAL_PAUSE_S]
    assert get("/assets/PlotlyPlot-x.js", "10.8.0.2") == 200  # another visitor
    assert get("/gradio_api/queue/data", "10.8.0.1") == 200  # not a front-end file
    assert all(get("/assets/PlotlyPlot-x.js", "127.0.0.1") == 200 for _ in range(20))  # the machine's own user


def _at(waiting: list, event: object) -> int:
    return next(i for i, e in enumerate(waiting) if e is event)


def _event(address: str, session: str = "s") -> SimpleNamespace:
    return SimpleNamespace(vitviz_address=address, session_hash=session)


def test_palette_and_float_images_are_capped_by_decoding_memory_before_decoding():
    """Row 5: a 40-megapixel palette PNG (54 KB) or float TIFF took 2 s and 200+ MB each."""
    from PIL import Image

    from vitviz.core.images import load_image
    from vitviz.errors import ImageError

    for mode, fmt, options in (("P", "PNG", {}), ("F", "TIFF", {"compression": "tiff_deflate"})):
        buffer = io.BytesIO()
        Image.new(mode, (8000, 5000)).save(buffer, fmt, **options)
        with pytest.raises(ImageError, match=f"mode {mode}; the limit for this kind of image"):
            load_image(buffer.getvalue())
    buffer = io.BytesIO()
    Image.new("P", (640, 480)).save(buffer, "PNG")
    assert load_image(buffer.getvalue()).size == (640, 480)


def test_what_gradio_fails_on_becomes_one_sentence_without_server_paths():
    """Row 9: bad file payloads or an example index 999 gave ``error: null`` and a traceback per call."""
    import gradio as gr

    from vitviz.ui.serve import contacts, errors
    from vitviz.ui.serve.pageconfig import server_folders

    contacts.install()
    with gr.Blocks() as demo:
        box = gr.Number()
        gr.Button().click(lambda x: [0][int(x)], box, box)
    demo.queue()
    fn = next(iter(demo.fns.values()))
    with pytest.raises(gr.Error) as raised:
        asyncio.run(demo.process_api(fn, [999], None))
    assert "an index or key that does not exist here" in str(raised.value.message)
    assert raised.value.print_exception is False
    inside = f"{server_folders()[0]}/assets/examples/astronaut.jpg"
    assert server_folders()[0] not in errors.sentence(FileNotFoundError(f"no such file {inside}"))
    assert "astronaut.jpg" in errors.sentence(FileNotFoundError(f"no such file {inside}"))


def test_the_api_description_names_no_server_folder():
    from vitviz.ui.serve.pageconfig import redact, server_folders

    folders = server_folders()
    info = {"a": [f"{folders[0]}/assets/examples/chelsea.jpg", {"b": f"see '{folders[0]}/x/y.png', then"}]}
    out = redact(info, folders)
    assert out == {"a": ["chelsea.jpg", {"b": "see 'y.png', then"}]}


def test_layer_sliders_follow_the_model_for_api_clients():
    """Row 10: a slider built for mae-tiny's 8 layers refused vit-base's layer 12 over the API."""
    import gradio as gr

    from vitviz.ui.binder import Binder
    from vitviz.ui.serve import contacts, inputs

    contacts.install()
    with gr.Blocks():
        ui = Binder()
        ui.model = gr.Dropdown(["a", "b"], value="a")
        ui.layer = gr.Slider(1, 8, value=1, step=1)
        ui.ratio = gr.Slider(0.0, 0.9, value=0.5, step=0.05)
        ui.model.change(**ui.bind(lambda model: gr.update(maximum=12), "layer"))  # the binder marks it
        ui.model.change(**ui.bind(lambda model: 0.5, "ratio"))
    layer, ratio = ui.layer, ui.ratio
    assert getattr(layer, inputs.DYNAMIC, False) and not getattr(ratio, inputs.DYNAMIC, False)
    assert layer.preprocess(12) == 12  # the view checks it against the chosen model
    with pytest.raises(gr.Error):
        ratio.preprocess(5.0)  # a fixed range is still Gradio's to check
    with pytest.raises(gr.Error, match="finite"):
        layer.preprocess(float("inf"))


def _door_headers(kind: bytes, extra: tuple = (), path: str = "/") -> dict:
    """The headers the door sends for an app's answer of content type ``kind`` (and ``extra`` headers)."""

    async def app(scope, receive, send):  # noqa: ANN001, ANN202
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", kind), *extra]})
        await send({"type": "http.response.body", "body": b"x"})

    sent: list[dict] = []

    async def send(message):  # noqa: ANN001, ANN202
        sent.append(message)

    async def receive():  # noqa: ANN202
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "GET", "path": path, "headers": [], "client": ("127.0.0.1", 1),
             "query_string": b""}
    asyncio.run(http.Hardening(app)(scope, receive, send))
    return {k.decode(): v.decode() for k, v in sent[0]["headers"]}


def test_the_page_is_cross_origin_isolated_and_other_answers_are_left_alone():
    """The app's HTML answers carry COOP same-origin and COEP credentialless (WASM threads for the in-page model);
    a picture or JSON does not need them; the in-browser route's own require-corp is kept."""
    page = _door_headers(b"text/html; charset=utf-8")
    assert page["cross-origin-opener-policy"] == "same-origin"
    assert page["cross-origin-embedder-policy"] == "credentialless"
    assert page["x-content-type-options"] == "nosniff"
    for kind in (b"image/png", b"application/json", b"text/javascript"):
        assert "cross-origin-embedder-policy" not in _door_headers(kind)
    own = _door_headers(b"text/html; charset=utf-8", ((b"cross-origin-opener-policy", b"same-origin"),
                                                      (b"cross-origin-embedder-policy", b"require-corp")),
                        "/in-browser/")
    assert own["cross-origin-embedder-policy"] == "require-corp"

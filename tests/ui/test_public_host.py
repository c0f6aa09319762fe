"""A public host through its HTTP API (issue 16; issue 15 items 1, 5-7): plain messages for
every bad input class, one-line logs, the documented endpoint names, the unavailable-model
memo, and no files left outside Gradio's cache."""

from __future__ import annotations

import re
import struct
import time
import zlib
from pathlib import Path

import pytest

from tools.appserver import running_app

ROOT = Path(__file__).resolve().parents[2]
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"
#: The endpoint table and the serving settings are documented in docs/ (linked from the README).
API_DOC = (ROOT / "docs" / "api.md").read_text()
DEPLOY_DOC = (ROOT / "docs" / "deploying.md").read_text()


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width x height`` pixels and holds no pixel data (a header-only bomb)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(
        b"IEND", b"")


def readme_endpoints() -> list[str]:
    """Every name in the first column of docs/api.md's endpoint table."""
    section = API_DOC.split("Named endpoints", 1)[1].split("\n\n", 2)[1]
    names = []
    for line in section.splitlines()[2:]:
        first = line.split("|")[1] if line.startswith("|") else ""
        names += re.findall(r"`([a-z_0-9]+)`", first)
    return names


def test_readme_endpoint_names_exist_exactly(app_url):
    from gradio_client import Client

    names = readme_endpoints()
    assert "reconstruct" in names and "swin_attention" in names
    api = Client(app_url, verbose=False).view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert [n for n in names if f"/{n}" not in api] == []
    assert not [n for n in api if re.search(r"_\d+$", n)], "a public endpoint took a numbered name"


@pytest.fixture(scope="module")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.mark.parametrize("case", ["not an image", "header-only bomb", "ratio as text", "fractional seed",
                                  "negative seed", "junk model name", "unknown pattern"])
def test_every_bad_input_gets_a_plain_message(client, tmp_path, case):
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    photo = handle_file(str(PHOTO))
    args = [photo, "mae-tiny", 0.75, 0, "random"]
    expected = {
        "not an image": "not an image in a format vitviz can read",
        "header-only bomb": "too many pixels",
        "ratio as text": "expected a number",
        "fractional seed": "whole number",
        "negative seed": "whole number",
        "junk model name": "not one of",
        "unknown pattern": "random",
    }[case]
    if case == "not an image":
        (tmp_path / "notes.png").write_text("this is text, renamed .png")
        args[0] = handle_file(str(tmp_path / "notes.png"))
    elif case == "header-only bomb":
        (tmp_path / "bomb.png").write_bytes(_png_header(100_000, 100_000))
        args[0] = handle_file(str(tmp_path / "bomb.png"))
    elif case == "ratio as text":
        args[2] = "abc"
    elif case == "fractional seed":
        args[3] = 1.5
    elif case == "negative seed":
        args[3] = -3
    elif case == "junk model name":
        # a megabyte of it is refused at the door (request bodies are capped: 413, issue 32 row 4)
        with pytest.raises(Exception, match="413"):
            client.predict(*args[:1], "x" * 1_000_000, *args[2:], api_name="/reconstruct")
        args[1] = "x" * 10_000
    else:
        args[4] = "zigzag"
    if case == "not an image":  # refused at upload, before Gradio stores it (the page shows the sentence)
        with pytest.raises(Exception, match="415"):
            client.predict(*args, api_name="/reconstruct")
        return
    with pytest.raises(AppError) as info:
        client.predict(*args, api_name="/reconstruct")
    message = str(info.value)
    assert expected in message and len(message) < 500 and "Traceback" not in message


def test_non_finite_numbers_get_a_plain_message(app_url):
    """NaN and Infinity cannot be sent by gradio_client; a raw queue call carries them."""
    import httpx

    with httpx.Client(timeout=60) as http:
        config = http.get(f"{app_url}config").json()
        idx = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "reconstruct")
        with PHOTO.open("rb") as fh:
            path = http.post(f"{app_url}gradio_api/upload", files={"files": (PHOTO.name, fh, "image/jpeg")}).json()[0]
        image = {"path": path, "orig_name": PHOTO.name, "meta": {"_type": "gradio.FileData"}}
        for literal in ("NaN", "Infinity"):
            session = f"nan-{literal}"
            body = ('{"data": [%s, "mae-tiny", 0.75, %s, "random"], "fn_index": %d, "session_hash": "%s", '
                    '"event_data": null, "trigger_id": null}') % (_json(image), literal, idx, session)
            r = http.post(f"{app_url}gradio_api/queue/join", content=body, headers={"content-type": "application/json"})
            assert r.status_code == 200
            error = _completed_error(http, app_url, session)
            assert error and "finite number" in error


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def _completed_error(http, url: str, session: str) -> str | None:  # noqa: ANN001
    import json

    with http.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": session}) as resp:
        for line in resp.iter_lines():
            if line.startswith("data:"):
                msg = json.loads(line[5:])
                if msg.get("msg") == "process_completed":
                    return (msg.get("output") or {}).get("error")
    return None


def test_an_unavailable_model_fails_fast_naming_itself(client):
    """Offline (the test app runs with HF_HUB_OFFLINE=1): a message naming the model, in milliseconds."""
    from gradio_client import handle_file
    from gradio_client.exceptions import AppError

    photo = handle_file(str(PHOTO))
    for name in ("mae-large", "mae-huge", "mae-large"):
        # the answer comes from the offline check (it names HF_HUB_OFFLINE), not from a download that gave up
        with pytest.raises(AppError, match=rf"\b{name} is unavailable.*HF_HUB_OFFLINE"):
            client.predict(photo, name, 0.75, 0, "random", api_name="/reconstruct")


def test_user_errors_are_one_log_line_and_nothing_is_left_outside_gradio_cache(tmp_path):
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError

    server_tmp, cache = tmp_path / "tmp", tmp_path / "gradio"
    server_tmp.mkdir()
    log = tmp_path / "app.log"
    with running_app(log=log, HF_HUB_OFFLINE="1", TMPDIR=str(server_tmp), GRADIO_TEMP_DIR=str(cache)) as (url, _):
        c = Client(url, verbose=False)
        before = log.read_text()
        with pytest.raises(AppError):
            c.predict(handle_file(str(PHOTO)), "mae-tiny", 0.75, 1.5, "random", api_name="/reconstruct")
        with pytest.raises(AppError):
            c.predict(handle_file(str(PHOTO)), "z" * 20_000, 0.75, 0, "random", api_name="/reconstruct")
        import httpx

        with pytest.raises(httpx.HTTPStatusError, match="413"):  # larger than any request needs: at the door
            c.predict(handle_file(str(PHOTO)), "z" * 100_000, 0.75, 0, "random", api_name="/reconstruct")
        c.predict(96, 7, api_name="/attention_flops")
        c.predict("MAE ViT-B/16", api_name="/mae_flops")
        time.sleep(1)
        added = log.read_text()[len(before):]
    assert "Traceback" not in added
    assert len([line for line in added.splitlines() if "user error in" in line]) == 2  # one line each
    assert len(added) < 2_000, "a user error must not copy its input into the log"
    leftovers = [p for p in server_tmp.rglob("*") if p.is_file()]
    assert leftovers == [], f"files outside Gradio's cache: {leftovers[:5]}"


def test_uploads_are_one_image_and_responses_are_not_sniffed(app_url, tmp_path):
    import httpx

    (tmp_path / "a.png").write_bytes(PHOTO.read_bytes())
    (tmp_path / "b.png").write_bytes(PHOTO.read_bytes())
    with httpx.Client(timeout=60) as http:
        with (tmp_path / "a.png").open("rb") as a, (tmp_path / "b.png").open("rb") as b:
            r = http.post(f"{app_url}gradio_api/upload", files=[("files", ("a.png", a)), ("files", ("b.png", b))])
        assert r.status_code == 400 and "one image file" in r.text
        # only images: text, an HTML page and an empty file renamed .png are refused, saying what is accepted
        for name, data in (("notes.png", b"this is text, renamed .png"), ("page.jpg", b"<html><script>x</script>"),
                           ("empty.png", b"")):
            r = http.post(f"{app_url}gradio_api/upload", files={"files": (name, data, "image/png")})
            assert r.status_code == 415 and "JPEG, PNG, WebP, GIF, BMP or TIFF" in r.text, (name, r.text)
        webp = tmp_path / "photo.webp"
        from PIL import Image

        Image.open(PHOTO).save(webp)
        for path in (webp, PHOTO):
            with path.open("rb") as f:
                assert http.post(f"{app_url}gradio_api/upload", files={"files": (path.name, f)}).status_code == 200
        with (tmp_path / "a.png").open("rb") as a:
            r = http.post(f"{app_url}gradio_api/upload", files={"files": ("a.png", a)})
        assert r.status_code == 200
        served = http.get(f"{app_url}gradio_api/file={r.json()[0]}")
        assert served.headers["x-content-type-options"] == "nosniff"
        info = http.get(f"{app_url}gradio_api/info").text
        from gradio.utils import get_upload_folder

        assert get_upload_folder() not in info  # the API description names no server path


def test_the_rate_limiter_refills_per_address():
    from vitviz.ledger import RateLimiter

    limiter = RateLimiter()
    granted = [limiter.allow("1.1.1.1", 60, now=0.0) for _ in range(20)]
    assert granted[:10] == [True] * 10 and not any(granted[10:])  # a burst of max(10, 60/8) = 10
    assert limiter.allow("2.2.2.2", 60, now=0.0)  # another address has its own bucket
    assert limiter.allow("1.1.1.1", 60, now=1.5)  # one request a second comes back
    assert not limiter.allow("1.1.1.1", 60, now=1.6)


def test_readme_documents_every_serving_setting():
    from vitviz import settings

    serving = [name for name, s in settings.SETTINGS.items()
               if any(word in name for word in ("PUBLIC", "DOWNLOADS", "LARGE", "QUEUE", "CLIENT", "PROXIES",
                                                "SESSIONS", "PROBE", "FAILURE", "THREADS", "MEASURE", "CONCURRENCY"))]
    assert len(serving) >= 18
    assert [name for name in serving if f"| `{name}` |" not in DEPLOY_DOC] == []


def test_the_front_end_files_and_the_page_are_compressed_once_and_served_from_memory():
    import asyncio
    import gzip

    import brotli

    from vitviz.ui.serve.http import StaticCache

    script = b"console.log('vitviz');\n" * 400
    calls: list[list] = []

    async def app(scope, receive, send):  # noqa: ANN001, ANN202 - a front-end file, sent in two chunks
        calls.append(scope["headers"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/javascript"), (b"content-length", b"9200")]})
        await send({"type": "http.response.body", "body": script[:5000], "more_body": True})
        await send({"type": "http.response.body", "body": script[5000:]})

    cache = StaticCache(app)

    async def get(path: str, encoding: bytes, query: bytes = b"", host: bytes = b"a") -> tuple[dict, bytes]:
        sent: list[dict] = []

        async def send(message):  # noqa: ANN001, ANN202
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": path, "query_string": query,
                 "headers": [(b"accept-encoding", encoding), (b"host", host)]}
        await cache(scope, None, send)
        return dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])

    async def run() -> None:
        for _ in range(3):
            headers, body = await get("/assets/Index-abc.js", b"gzip, deflate, br")
            assert headers[b"content-encoding"] == b"br" and brotli.decompress(body) == script
        headers, body = await get("/assets/Index-abc.js", b"gzip")
        assert gzip.decompress(body) == script and int(headers[b"content-length"]) == len(body)
        await get("/gradio_api/info", b"br")  # not a front-end file: passed through every time
        await get("/gradio_api/info", b"br")
        # the page: one copy per root URL, whatever vitviz's own query says; a deep link is passed through
        for query in (b"", b"tab=swin", b"tab=mae&ratio=0.5"):
            assert brotli.decompress((await get("/", b"br", query))[1]) == script
        await get("/", b"br", host=b"b")
        await get("/", b"br", query=b"deep_link=abc")

    asyncio.run(run())
    assert len(calls) == 7  # br once, gzip once, the two other requests, the page per host, the deep link
    assert all(b"accept-encoding" not in dict(h) for h in calls[:2])  # the app is asked for the plain file




def _join(url: str, fn_index: int, data: list) -> tuple[int, str]:
    """A raw queue join as the page sends it; (HTTP status of the join, the answer's error text or detail)."""
    import json
    import uuid

    import httpx

    session = uuid.uuid4().hex
    with httpx.Client(timeout=120) as http:
        r = http.post(url + "gradio_api/queue/join", json={"data": data, "fn_index": fn_index, "session_hash": session,
                                                           "event_data": None, "trigger_id": None})
        if r.status_code != 200:
            return r.status_code, str(r.json().get("detail") or r.json().get("error"))
        with http.stream("GET", url + "gradio_api/queue/data", params={"session_hash": session}) as resp:
            for line in resp.iter_lines():
                if line.startswith("data:"):
                    msg = json.loads(line[5:])
                    if msg.get("msg") == "process_completed":
                        return 200, str((msg.get("output") or {}).get("error"))
    return 200, "no answer"


def test_bad_file_payloads_and_missing_values_get_sentences_not_error_null(app_url):
    """Issue 32 row 9: a file value naming a server path, a plain string for a file, too few values: each
    gets a sentence (never ``error: null`` or "Something went wrong"), no server path, and the app answers on."""
    import httpx

    config = httpx.get(app_url + "config").json()
    fn = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "reconstruct")
    answers = [
        _join(app_url, fn, [{"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}}, "mae-tiny", 0.75, 0, "random"]),
        _join(app_url, fn, ["just a string", "mae-tiny", 0.75, 0, "random"]),
        _join(app_url, fn, [None, "mae-tiny"]),
    ]
    for status, text in answers:
        assert text not in ("None", "", "no answer") and "Something went wrong" not in text, answers
        assert "root:" not in text and str(ROOT) not in text
    assert "This request has" in answers[2][1], answers  # Gradio's own check, as a sentence (serve.errors)
    from gradio_client import Client, handle_file

    ok = Client(app_url, verbose=False).predict(handle_file(str(PHOTO)), "mae-tiny", 0.75, 0, "random",
                                                api_name="/reconstruct")
    assert "of 196" in ok[-1]  # the app answers on

"""The app's ``/in-browser/`` route serves the static page's files, cross-origin isolated, and nothing else."""

from __future__ import annotations

import hashlib
import json

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from vitviz.ui.serve import in_browser
from vitviz.ui.serve.in_browser import InBrowserPage


@pytest.fixture(scope="module")
def client():
    inner = Starlette(routes=[Route("/", lambda r: PlainTextResponse("gradio page")),
                              Route("/in-browserx", lambda r: PlainTextResponse("not ours"))],
                      middleware=[Middleware(InBrowserPage)])
    with TestClient(inner) as c:
        yield c


def test_page_files_come_with_isolation_headers(client):
    r = client.get("/in-browser/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.headers["cross-origin-opener-policy"] == "same-origin"
    assert r.headers["cross-origin-embedder-policy"] == "require-corp"
    assert "mae_page.js" in r.text
    wasm = client.get("/in-browser/vendor/ort-wasm-simd-threaded.wasm")
    manifest = json.loads((in_browser.files()["vendor/manifest.json"]).read_text())
    assert wasm.headers["content-type"] == "application/wasm"
    assert hashlib.sha256(wasm.content).hexdigest() == manifest["files"]["ort-wasm-simd-threaded.wasm"]["sha256"]
    assert client.get("/in-browser/mae_core.js").headers["content-type"] == "text/javascript"
    tables = client.get("/in-browser/masks.json").json()
    assert tables["grid"] == [14, 14] and len(tables["random"]) == tables["seeds"]
    assert set(client.get("/in-browser/files.json").json()) == set(in_browser.files())


def test_unknown_files_methods_and_other_paths(client):
    assert client.get("/in-browser/../app.py").status_code == 404
    assert client.get("/in-browser/nothing.js").status_code == 404
    assert client.post("/in-browser/index.html").status_code == 405
    r = client.get("/in-browser", follow_redirects=False)
    assert r.status_code == 308 and r.headers["location"] == "/in-browser/"
    head = client.head("/in-browser/mae-tiny.onnx")
    assert head.status_code == 200 and head.content == b"" and int(head.headers["content-length"]) > 10_000_000
    for path, text in (("/", "gradio page"), ("/in-browserx", "not ours")):
        r = client.get(path)
        assert r.text == text and "cross-origin-opener-policy" not in r.headers


def test_a_returning_browser_revalidates_instead_of_downloading_again(client):
    first = client.get("/in-browser/mae-tiny.onnx")
    tag = first.headers["etag"]
    assert first.status_code == 200 and first.headers["cache-control"] == "no-cache" and len(first.content) > 10_000_000
    again = client.get("/in-browser/mae-tiny.onnx", headers={"if-none-match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert again.headers["cross-origin-embedder-policy"] == "require-corp"
    assert client.get("/in-browser/mae-tiny.onnx", headers={"if-none-match": '"other"'}).status_code == 200
    # each file has its own tag
    assert client.get("/in-browser/mae_core.js").headers["etag"] != tag

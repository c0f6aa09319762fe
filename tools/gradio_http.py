"""A visitor of the app through Gradio's HTTP API (``/gradio_api/upload``, ``/gradio_api/call/NAME``), with
httpx: it keeps the cookies a proxy gives it (deploy/: the route cookie), as a browser does."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import httpx


def digest(client: httpx.Client, value: object) -> object:
    """An answer's value with each image replaced by the SHA-256 of its decoded pixels (file names differ
    between replicas; the pixels must not). Files are fetched with the visitor's cookies."""
    import numpy as np
    from PIL import Image

    if isinstance(value, dict) and value.get("url"):
        r = client.get(value["url"])
        r.raise_for_status()
        return hashlib.sha256(np.asarray(Image.open(io.BytesIO(r.content)).convert("RGB")).tobytes()).hexdigest()
    if isinstance(value, list):
        return [digest(client, v) for v in value]
    return value


class Visitor:
    """One visitor: an httpx client on ``url`` that notes the ``X-Vitviz-Upstream`` of every answer (the
    replica, where deploy/render.py --expose-upstream put it)."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.client = httpx.Client(base_url=url, timeout=timeout)
        self.replicas: set[str] = set()
        self.upload = ""

    def _note(self, r: httpx.Response) -> httpx.Response:
        if "x-vitviz-upstream" in r.headers:
            self.replicas.add(r.headers["x-vitviz-upstream"])
        return r

    def arrive(self, photo: Path) -> None:
        """Open the page and upload ``photo`` (kept as :attr:`upload`, the server's path)."""
        self._note(self.client.get("/")).raise_for_status()
        r = self._note(self.client.post("/gradio_api/upload",
                                        files=[("files", (photo.name, photo.read_bytes(), "image/jpeg"))]))
        r.raise_for_status()
        self.upload = r.json()[0]

    def call(self, api_name: str, data: list) -> tuple[str, object]:
        """One call; returns ``(event, data)``: ``complete`` with the answer's values (images as
        :func:`digest`), or ``error`` with its message."""
        r = self._note(self.client.post(f"/gradio_api/call/{api_name}", json={"data": data}))
        if r.status_code != 200:
            return "error", r.text
        r = self._note(self.client.get(f"/gradio_api/call/{api_name}/{r.json()['event_id']}"))
        event, found = "", None
        for line in r.text.splitlines():
            if line.startswith("event:"):
                event = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                found = json.loads(line.split(":", 1)[1].strip() or "null")
        if event == "complete":
            return event, digest(self.client, found)
        return event or "error", found

    def reconstruct(self, seed: int) -> tuple[str, object]:
        """The MAE tab's ``reconstruct`` of the uploaded photo with mae-tiny (75% hidden, random mask)."""
        image = {"path": self.upload, "meta": {"_type": "gradio.FileData"}}
        return self.call("reconstruct", [image, "mae-tiny", 0.75, seed, "random"])

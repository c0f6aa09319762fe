"""A fake camera for Chromium: a Y4M video panned across a photo, for tests, benchmarks and screenshots.

Chromium plays it as the webcam with ``--use-fake-device-for-media-stream
--use-fake-ui-for-media-stream --use-file-for-fake-video-capture=FILE`` (:func:`camera_args`),
looping it. Every frame differs (the view pans), so each reconstruction differs too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "assets" / "examples" / "chelsea.jpg"


def pan_frames(photo: Path = PHOTO, size: tuple[int, int] = (320, 240), count: int = 30) -> list[np.ndarray]:
    """``count`` RGB uint8 frames ``(H, W, 3)`` of ``size`` (width, height): a window panning across ``photo``
    and back."""
    w, h = size
    im = Image.open(photo).convert("RGB")
    scale = (h * 1.25) / im.height
    im = im.resize((max(w + 1, round(im.width * scale)), round(im.height * scale)))
    span_x, span_y = im.width - w, im.height - h
    out = []
    for i in range(count):
        t = 1 - abs(2 * i / max(1, count - 1) - 1)  # 0 -> 1 -> 0
        x, y = round(t * span_x), round(t * span_y / 2)
        out.append(np.asarray(im.crop((x, y, x + w, y + h))))
    return out


def write_y4m(path: Path, frames: list[np.ndarray], fps: int = 30) -> Path:
    """Write RGB frames as an uncompressed 4:2:0 Y4M video (what Chromium's fake capture reads)."""
    h, w = frames[0].shape[:2]
    if w % 2 or h % 2:
        raise ValueError("Y4M 4:2:0 frames need an even width and height")
    with open(path, "wb") as f:
        f.write(f"YUV4MPEG2 W{w} H{h} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for rgb in frames:
            ycc = np.asarray(Image.fromarray(rgb).convert("YCbCr"), dtype=np.float32)
            y = ycc[..., 0]
            cb = ycc[..., 1].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
            cr = ycc[..., 2].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
            f.write(b"FRAME\n")
            for plane in (y, cb, cr):
                f.write(np.clip(np.round(plane), 0, 255).astype(np.uint8).tobytes())
    return Path(path)


def camera_args(y4m: Path | None) -> list[str]:
    """Chromium's switches for a fake camera (its own test pattern, or ``y4m`` when given) that needs no
    permission prompt."""
    args = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    return args + ([f"--use-file-for-fake-video-capture={y4m}"] if y4m else [])

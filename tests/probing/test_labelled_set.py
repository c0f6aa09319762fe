"""The labelled photo set: its manifest, its split, and what it must never contain."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

from vitviz.probing.features import load_manifest
from vitviz.training.labelled import (CLASSES, DUPLICATE_DISTANCE, _readme_credits, split_rows, thumb, thumb_distance)
from vitviz.training.sources import HELDOUT_MEMBERS

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = load_manifest()
PHOTOS = MANIFEST["photos"]


def test_manifest_has_eight_classes_of_twenty_photos_with_their_provenance():
    counts = Counter(p["label"] for p in PHOTOS)
    assert set(counts) == set(MANIFEST["classes"]) == set(CLASSES)
    assert len(counts) >= 8 and min(counts.values()) >= 20
    for p in PHOTOS:
        assert p["package"] in ("gcompris-qt-data", "tuxpaint-stamps-default")
        assert p["version"] and p["member"] and p["licence"] and p["credit"]
        assert p["split"] in ("train", "val", "test")


def test_no_photo_is_in_two_splits():
    ids = [p["id"] for p in PHOTOS]
    members = [(p["package"], p["member"]) for p in PHOTOS]
    assert len(set(ids)) == len(ids) and len(set(members)) == len(members)
    # ...nor a look-alike: every pair of photos in different splits differs in its thumbnail
    thumbs = np.stack([np.frombuffer(bytes.fromhex(p["thumb"]), np.uint8).astype(np.int16) for p in PHOTOS])
    split = np.array([p["split"] for p in PHOTOS])
    dist = np.abs(thumbs[:, None, :] - thumbs[None, :, :]).mean(axis=2)
    other = split[:, None] != split[None, :]
    assert dist[other].min() >= DUPLICATE_DISTANCE


def test_every_class_has_test_validation_and_ten_train_photos():
    for label in MANIFEST["classes"]:
        n = Counter(p["split"] for p in PHOTOS if p["label"] == label)
        assert n["test"] == 8 and n["val"] == 4 and n["train"] >= 10, (label, n)


def _heldout_manifests() -> list[dict]:
    """Other photo lists of the embedded models (their held-out / test photos) shipped in assets/models."""
    out = []
    for path in sorted((ROOT / "assets" / "models").glob("*.json")):
        doc = json.loads(path.read_text())
        rows = doc if isinstance(doc, list) else doc.get("photos", doc.get("images", []))
        if isinstance(rows, list):  # a list of photos; other files say only how many (vq-kd-tiny.grouping.json)
            out += [r for r in rows if isinstance(r, dict)]
    return out


def test_none_is_a_held_out_photo_of_the_embedded_models():
    names = {(pkg, m.split("/", 1)[0], m.rsplit("/", 1)[-1]) for pkg, m in HELDOUT_MEMBERS}
    for p in PHOTOS:
        assert (p["package"], p["member"].split("/", 1)[0], p["member"].rsplit("/", 1)[-1]) not in names
    listed = {(r.get("package"), r.get("member")) for r in _heldout_manifests()}
    assert not listed & {(p["package"], p["member"]) for p in PHOTOS}
    # pixels: no labelled photo looks like a held-out photo (same thumbnail up to a small distance)
    held = [thumb(Image.open(f)) for f in sorted((ROOT / "assets" / "models" / "heldout").glob("*.png"))]
    assert len(held) >= 13
    for p in PHOTOS:
        assert min(thumb_distance(p["thumb"], h) for h in held) >= DUPLICATE_DISTANCE, p["id"]


def _row(label: str, member: str, seed: int) -> dict:
    arr = np.random.default_rng(seed).integers(0, 255, (40, 40, 3), dtype=np.uint8)
    return {"label": label, "package": "p", "member": member, "cutout": False, "image": Image.fromarray(arr)}


def test_split_rule_is_deterministic_drops_duplicates_and_held_out_look_alikes():
    rows = [_row("bird", f"b{i}.webp", i) for i in range(20)] + [_row("bird", "copy.webp", 3)]
    held = [thumb(_row("bird", "x", 7)["image"])]
    out = split_rows([dict(r) for r in rows], held)
    members = [r["member"] for r in out]
    assert "copy.webp" not in members and "b7.webp" not in members and len(out) == 19
    again = split_rows([dict(r) for r in reversed(rows[:-1])] + [dict(rows[-1])], held)  # order of the input
    assert sorted((r["member"], r["split"]) for r in again) == sorted((r["member"], r["split"]) for r in out)
    assert Counter(r["split"] for r in out) == {"test": 8, "val": 4, "train": 7}


def test_readme_credits_are_read_per_file():
    readme = (b"Copyright: Ann\nSource: https://x/a.jpg\nLicense: CC0-1.0\nFiles:\na.webp\n\n"
              b"Copyright: Bob\nLicense: Public Domain\nFiles:\nb.webp\nc.webp\n")
    credits = _readme_credits({"categorization/images/fishes/README": readme})
    assert credits["categorization/images/fishes/a.webp"] == "Copyright: Ann; License: CC0-1.0; Source: https://x/a.jpg"
    assert credits["categorization/images/fishes/c.webp"] == "Copyright: Bob; License: Public Domain"


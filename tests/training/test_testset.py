"""The test set: disjoint from training and validation, and its extraction checks every file."""

from __future__ import annotations

import bz2
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from vitviz.training.data import DEB_PACKAGES, HELDOUT
from vitviz.training.sources import EXTRA_DEB_PACKAGES, HELDOUT_MEMBERS
from vitviz.training.testset import FACE_SHAPE, BadTestPhoto, extract, extracted_paths, load_manifest, split_paths


def test_the_test_set_shares_no_package_member_name_or_file_with_training_and_validation() -> None:
    m = load_manifest()
    packages = {ph["package"] for ph in m["photos"]}
    assert packages == set(m["packages"])
    assert not packages & (set(DEB_PACKAGES) | set(EXTRA_DEB_PACKAGES)), "a test package is a training package"
    wheels = {req.split("==")[0] for req, _, _ in HELDOUT}
    assert not packages & wheels, "a test package holds validation photos"
    validation_names = {Path(member).stem for _, member, _ in HELDOUT} | {n for n, _ in HELDOUT_MEMBERS.values()}
    names = [ph["name"] for ph in m["photos"]]
    assert len(set(names)) == len(names) and not set(names) & validation_names
    assert not {(ph["package"], ph["member"]) for ph in m["photos"]} & set(HELDOUT_MEMBERS)
    digests = [ph["sha256"] for ph in m["photos"]]
    assert len(set(digests)) == len(digests) and all(len(d) == 64 for d in digests)
    for ph in m["photos"]:
        assert ph["licence"] and ph["credit"] and ph["version"] == m["packages"][ph["package"]]


def _fake_roots(tmp_path: Path, m: dict) -> dict[str, Path]:
    """Unpacked packages holding files in the upstream formats, with the manifest's digests rewritten."""
    roots = {}
    rng = np.random.default_rng(0)
    for ph in m["photos"]:
        root = roots.setdefault(ph["package"], tmp_path / ph["package"])
        f = root / ph["member"]
        f.parent.mkdir(parents=True, exist_ok=True)
        if ph["format"] == "scipy-face-dat":
            data = bz2.compress(rng.integers(0, 256, FACE_SHAPE, dtype=np.uint8).tobytes())
        else:
            buf = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, (240, 300, 3), dtype=np.uint8)).save(buf, format="JPEG")
            data = buf.getvalue()
        f.write_bytes(data)
        ph["sha256"] = hashlib.sha256(data).hexdigest()
    return roots


def test_extract_writes_every_photo_and_refuses_a_changed_file(tmp_path: Path) -> None:
    m = load_manifest()
    roots = _fake_roots(tmp_path / "pk", m)
    out = tmp_path / "test"
    paths = extract(m, roots, out)
    assert paths == extracted_paths(out, m) == [out / f"{ph['name']}.png" for ph in m["photos"]]
    face = next(p for p, ph in zip(paths, m["photos"]) if ph["format"] == "scipy-face-dat")
    assert Image.open(face).size == (FACE_SHAPE[1], FACE_SHAPE[0])
    m["photos"][0]["sha256"] = "0" * 64
    with pytest.raises(BadTestPhoto, match="SHA-256"):
        extract(m, roots, out)


def test_split_paths_reads_validation_from_the_data_manifest_and_test_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"heldout": [{"path": "/x/chelsea.png"}]}')
    assert split_paths(tmp_path, "validation", tmp_path / "t") == [Path("/x/chelsea.png")]
    with pytest.raises(BadTestPhoto, match="not extracted"):
        split_paths(tmp_path, "test", tmp_path / "t")
    with pytest.raises(ValueError):
        split_paths(tmp_path, "train", tmp_path / "t")

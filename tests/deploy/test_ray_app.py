"""The served app with its model calls on Ray actors (``VITVIZ_WORKERS=ray``, a local Ray the app starts) answers
reconstruct, attention and explain as the app that runs them in its own process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import numpy as np
import pytest
from PIL import Image

from tools.appserver import ROOT, running_app

ray = pytest.importorskip("ray", reason="Ray is an optional extra (pip install 'vitviz[ray]')")

ENV = dict(HF_HUB_OFFLINE="1", OMP_NUM_THREADS="2", VITVIZ_PACKAGE_WEIGHTS="0", VITVIZ_WARMUP="0")
#: The calls compared: endpoint -> its values after the photo (mae-tiny; the explained classifier has random weights).
CALLS = {"/reconstruct": ("mae-tiny", 0.75, 3, "random"),
         "/attention_query": ("mae-tiny", "encoder", 0.0, 0, 2, "patch", 5, 6),
         "/explain": ("deit-small-distilled:random", "predicted", "grad_rollout", "drop", 2)}


@pytest.fixture(scope="module")
def ray_folder() -> Iterator[str]:
    """A short folder for Ray's session (its sockets' paths must stay short), removed after; skips with Ray's
    own words where a local Ray cannot start."""
    folder = tempfile.mkdtemp(prefix="vitviz-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    probe = ("import ray; ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _temp_dir=%r); "
             "ray.shutdown()" % folder)
    try:
        try:
            done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=240)
        except subprocess.TimeoutExpired:
            pytest.skip("Ray cannot start here: a local ray.init did not finish in 240 s")
        if done.returncode != 0:
            pytest.skip(f"Ray cannot start here: {(done.stderr.strip().splitlines() or ['no message'])[-1]}")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _descendants(pid: int) -> list[str]:
    """The command lines of ``pid``'s descendants (Linux /proc)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            children = [int(c) for c in open(f"/proc/{p}/task/{p}/children").read().split()]
        except OSError:
            continue
        for c in children:
            try:
                found.append(open(f"/proc/{c}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass
        todo += children
    return found


def _values(answer: object) -> list:
    """An endpoint's answer with each image file read as pixels (file paths differ between apps)."""
    out = []
    for part in answer if isinstance(answer, (list, tuple)) else [answer]:
        if isinstance(part, str) and os.path.isfile(part) and part.lower().endswith((".png", ".webp", ".jpg")):
            out.append(np.asarray(Image.open(part)))
        else:
            out.append(part)
    return out


def test_the_app_on_ray_actors_answers_as_in_process(app_url, photo_path, ray_folder, tmp_path):
    from gradio_client import Client, handle_file

    def answers(url: str) -> dict[str, list]:
        client = Client(url, verbose=False)
        return {name: _values(client.predict(handle_file(str(photo_path)), *values, api_name=name))
                for name, values in CALLS.items()}

    here = answers(app_url)
    with running_app(log=tmp_path / "app.log", VITVIZ_WORKERS="ray", RAY_TMPDIR=ray_folder,
                     PYTHONPATH=str(ROOT), **ENV) as (url, proc):
        there = answers(url)
        actors = [c for c in _descendants(proc.pid) if "_ModelActor" in c]
        assert actors, "no Ray actor ran the model calls"
    for name in CALLS:
        assert len(here[name]) == len(there[name]), name
        for a, b in zip(here[name], there[name]):
            if isinstance(a, np.ndarray):
                assert a.shape == b.shape and np.array_equal(a, b), name
            else:
                assert a == b, name

"""Shared fixtures: tiny random models, example images, and a running app."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "assets" / "examples"

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def tiny_config():
    """A very small MAE (patch 16 at 64x64: a 4x4 grid) for fast invariant tests."""
    from vitviz.models.mae import MAEConfig

    return MAEConfig(img_size=64, patch_size=16, embed_dim=32, depth=2, num_heads=2,
                     decoder_embed_dim=32, decoder_depth=1, decoder_num_heads=2)


@pytest.fixture(scope="session")
def tiny_loaded(tiny_config):
    """A LoadedModel wrapping a random tiny MAE (weights do not matter for invariants)."""
    from vitviz.images import DataConfig
    from vitviz.models.loading import LoadedModel
    from vitviz.models.mae import MaskedAutoencoderViT
    from vitviz.models.registry import get_spec

    torch.manual_seed(0)  # test-only: deterministic random weights
    module = MaskedAutoencoderViT(tiny_config).eval()
    return LoadedModel("mae-tiny", get_spec("mae-tiny"), module, DataConfig(input_size=64), torch.device("cpu"))


@pytest.fixture(scope="session")
def photo_path() -> Path:
    """A real photo from the bundled examples."""
    return EXAMPLES / "chelsea.jpg"


@pytest.fixture()
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """Start ``python app.py`` on a free loopback port; yield its URL; stop it after."""
    port = free_port()
    env = dict(os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1",
               GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", OMP_NUM_THREADS="2")
    log = tmp_path_factory.mktemp("app") / "app.log"
    with log.open("w") as fh:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 180
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"app exited early:\n{log.read_text()}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"app did not start in time:\n{log.read_text()}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()

"""Every VITVIZ_* setting is parsed in one place, lazily, with a readable error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vitviz import settings

ROOT = Path(__file__).resolve().parents[1]


def test_every_setting_the_code_reads_is_in_the_table():
    import re

    names = set()
    for path in (ROOT / "vitviz").rglob("*.py"):
        if "training" in path.parts:
            continue
        names |= set(re.findall(r"\"(VITVIZ_[A-Z_]+)\"", path.read_text()))
    assert names <= set(settings.SETTINGS) | set(settings.DEPRECATED)
    assert all(s.doc and s.name.startswith("VITVIZ_") for s in settings.SETTINGS.values())
    assert not settings.check()  # the defaults are valid


def test_values_are_read_when_asked(monkeypatch):
    monkeypatch.setenv("VITVIZ_MAX_MODELS", "5")
    assert settings.get("VITVIZ_MAX_MODELS") == 5
    monkeypatch.setenv("VITVIZ_MAX_MODELS", "")
    assert settings.get("VITVIZ_MAX_MODELS") == 8
    monkeypatch.setenv("VITVIZ_ONEDNN", "off")
    assert settings.get("VITVIZ_ONEDNN") is False
    monkeypatch.setenv("VITVIZ_PRECISION", "BF16")
    assert settings.get("VITVIZ_PRECISION") == "bf16"


@pytest.mark.parametrize("name,value", [("VITVIZ_MAX_MODELS", "three"), ("VITVIZ_PRECISION", "fp8"),
                                        ("VITVIZ_ONEDNN", "maybe"), ("VITVIZ_MAX_UPLOAD", "lots"),
                                        ("VITVIZ_CONCURRENCY", "0")])
def test_a_bad_value_names_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        settings.get(name)
    assert any(name in p for p in settings.check())
    with pytest.raises(ValueError, match="unknown setting"):
        settings.get("VITVIZ_NOPE")


def test_a_typo_never_breaks_the_import():
    env = {"PATH": "/usr/bin", "VITVIZ_MAX_MODELS": "three", "VITVIZ_MAX_UPLOAD": "lots", "VITVIZ_PRECISION": "x"}
    code = "import vitviz, vitviz.ui.app, vitviz.mae.sweep, vitviz.explain.attention; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-1500:]


def test_the_upload_limit_has_one_name_and_a_deprecated_alias(monkeypatch):
    from vitviz import ImageError, load_image

    assert settings.parse_bytes("20mb") == 20 * 2**20 and settings.parse_bytes("512kb") == 512 * 1024
    assert settings.parse_bytes("1000") == 1000
    monkeypatch.delenv("VITVIZ_MAX_UPLOAD", raising=False)
    monkeypatch.setenv("VITVIZ_MAX_UPLOAD_BYTES", "100")
    with pytest.warns(DeprecationWarning, match="VITVIZ_MAX_UPLOAD"):
        assert settings.max_upload_bytes() == 100
    monkeypatch.setenv("VITVIZ_MAX_UPLOAD", "1kb")
    assert settings.max_upload_bytes() == 1024  # the new name wins
    with pytest.raises(ImageError, match="limit"):
        load_image(b"\x89PNG" + bytes(2000))
    from vitviz.ui.app import launch_options

    assert launch_options()["max_file_size"] == 1024  # the app's uploads use the same limit


def test_the_table_documents_every_setting():
    table = settings.table()
    assert all(f"`{name}`" in table for name in settings.SETTINGS)
    out = subprocess.run([sys.executable, "-m", "vitviz", "settings"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and all(name in out.stdout for name in settings.SETTINGS)


@pytest.mark.parametrize("public, given, expected", [("1", "", "processes"), ("0", "", "off"), ("1", "off", "off"),
                                                     ("0", "processes", "processes"), ("1", "ray", "ray")])
def test_model_workers_are_on_by_default_on_a_public_host_only(monkeypatch, public, given, expected):
    monkeypatch.setenv("VITVIZ_PUBLIC", public)
    monkeypatch.setenv("VITVIZ_WORKERS", given)
    assert settings.workers() == expected

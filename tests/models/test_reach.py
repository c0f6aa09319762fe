"""Offline and public hosts (issues 15.1, 16.3): a short cached reachability probe, a failure memo."""

from __future__ import annotations

import socket
import time

import pytest

import vitviz
from vitviz.errors import ModelUnavailable
from vitviz.models import reach


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    import huggingface_hub.constants

    from vitviz.models import loading

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    loading.CACHE.clear()
    monkeypatch.delenv("VITVIZ_WEIGHTS_DIR", raising=False)
    reach.forget_hosts()
    reach.FAILURES.clear()
    yield
    reach.forget_hosts()
    reach.FAILURES.clear()


@pytest.fixture()
def probes(monkeypatch):
    """Count probes; every host is unreachable."""
    calls: list[str] = []

    def probe(host: str, timeout: float) -> tuple[bool, str]:
        calls.append(host)
        return False, "ConnectError"

    monkeypatch.setattr(reach, "PROBE", probe)
    return calls


def test_unreachable_hosts_list_models_as_unavailable_with_the_folder(monkeypatch, probes):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    infos = {i.name: i for i in vitviz.available_models()}
    assert infos["mae-tiny"].available
    mae_base = infos["mae-base"]
    assert not mae_base.available
    assert "cannot be reached" in mae_base.reason and "mae_visualize_vit_base.pth" in mae_base.reason
    assert "VITVIZ_WEIGHTS_DIR" in mae_base.reason
    # Every host was probed once, however many models use it; a second listing probes nothing.
    assert sorted(probes) == sorted(set(probes))
    n = len(probes)
    vitviz.available_models()
    assert len(probes) == n


def test_a_failed_model_is_answered_from_memory_naming_it(monkeypatch, probes):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with pytest.raises(ModelUnavailable, match="mae-large"):
        vitviz.load_model("mae-large", device="cpu")
    n = len(probes)
    reach.forget_hosts()  # even with the probe answer gone, the failure is remembered
    for _ in range(20):
        with pytest.raises(ModelUnavailable, match="^mae-large"):
            vitviz.load_model("mae-large", device="cpu")
    # answered from memory: no new probe and no download attempt (speed is measured in bench/, not here)
    assert len(probes) == n, "a remembered failure must not probe again"
    with pytest.raises(ModelUnavailable, match="^mae-huge"):  # each model names itself
        vitviz.load_model("mae-huge", device="cpu")


def test_offline_never_touches_the_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_network(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("no network access expected offline")

    monkeypatch.setattr(reach, "PROBE", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    infos = {i.name: i for i in vitviz.available_models()}
    assert not infos["mae-base"].available and "HF_HUB_OFFLINE" in infos["mae-base"].reason
    with pytest.raises(ModelUnavailable, match="^mae-base"):
        vitviz.load_model("mae-base", device="cpu")


def test_a_slow_host_is_waited_for_at_most_the_probe_time(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("VITVIZ_PROBE_SECONDS", "0.2")

    def hanging(host: str, timeout: float) -> tuple[bool, str]:
        time.sleep(5)  # e.g. name resolution that never answers
        return True, ""

    monkeypatch.setattr(reach, "PROBE", hanging)
    # the hanging probe would answer "reachable" after 5 s: "no answer" shows the wait was cut at the probe time
    answer = reach.reachable(["huggingface.co", "dl.fbaipublicfiles.com"])
    assert all(not ok and "no answer" in why for ok, why in answer.values())


def test_public_host_downloads_only_the_allow_list(monkeypatch):
    from vitviz import settings

    monkeypatch.setattr(reach, "PROBE", lambda host, timeout: (True, ""))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    assert settings.download_allowed("mae-base", 448) and not settings.download_allowed("mae-large", 1318)
    infos = {i.name: i for i in vitviz.available_models()}
    assert infos["mae-base"].available
    assert not infos["mae-large"].available and "public host" in infos["mae-large"].reason
    monkeypatch.setenv("VITVIZ_DOWNLOADS", "mae-large")
    assert settings.download_allowed("mae-large", 1318) and not settings.download_allowed("mae-base", 448)
    monkeypatch.setenv("VITVIZ_PUBLIC", "auto")
    monkeypatch.setenv("SPACE_ID", "someone/vitviz")
    assert settings.public() and settings.trusted_proxies() == 1


@pytest.mark.parametrize("offline", [True, False])
def test_the_cli_fails_at_once_for_an_unavailable_model(monkeypatch, tmp_path, capsys, offline):
    from vitviz.cli import main

    photo = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "assets" / "examples" / "chelsea.jpg")
    def no_network(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("no download attempt expected (the hub client's retries took 51 s)")

    # failing at once means never opening a connection: no socket may connect in either case
    monkeypatch.setattr(socket.socket, "connect", no_network)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        monkeypatch.setattr(reach, "PROBE", no_network)
    else:  # online, but the hosts do not answer the (stubbed) reachability check
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(reach, "PROBE", lambda host, timeout: (False, "ConnectError"))
    assert main(["reconstruct", photo, "--model", "mae-large", "--out", str(tmp_path / "out.png")]) == 1
    err = capsys.readouterr().err
    assert "mae-large" in err and "mae_visualize_vit_large.pth" in err and "VITVIZ_WEIGHTS_DIR" in err
    assert ("HF_HUB_OFFLINE" if offline else "cannot be reached") in err


def test_a_public_host_keeps_at_most_one_large_model(monkeypatch):
    from types import SimpleNamespace

    from vitviz.models import loading

    loads: list[str] = []

    def fake_load(spec, device, kernels):  # noqa: ANN001 - no weights needed to test the policy
        loads.append(spec.name)
        return SimpleNamespace(spec=spec, name=spec.name)

    monkeypatch.setattr(loading, "_load_uncached", fake_load)
    monkeypatch.setattr(loading, "CACHE", loading.LRU(8))
    monkeypatch.setenv("VITVIZ_PUBLIC", "1")
    for name in ("mae-large", "mae-base", "mae-huge", "mae-base", "mae-large"):
        loading.load_model(name, device="cpu")
    # mae-huge pushed mae-large out, and mae-large pushed mae-huge out; mae-base (small) stayed.
    assert loads == ["mae-large", "mae-base", "mae-huge", "mae-large"]
    monkeypatch.setenv("VITVIZ_PUBLIC", "0")  # elsewhere, no separate limit
    loading.load_model("mae-huge", device="cpu")
    loading.load_model("mae-large", device="cpu")
    assert loads[-1] == "mae-huge"

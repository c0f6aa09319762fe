"""The ZeroGPU path (vitviz.ui.serve.zerogpu): with a stand-in ``spaces`` module, every heavy endpoint's model
forward passes run inside the function ``spaces.GPU`` decorated, and nothing else does."""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from PIL import Image

from vitviz.models import runner


class StandIn:
    """A stand-in for the ``spaces`` package: ``GPU`` decorates as the real one does, and counts how many
    decorated calls are running (``active``) and how many ran (``calls``)."""

    def __init__(self) -> None:
        self.active = 0
        self.calls = 0
        self.durations: list[object] = []

    def GPU(self, task=None, *, duration=None, **_kw):  # noqa: ANN001, ANN201, N802 - spaces' own name
        self.durations.append(duration)

        def decorate(fn):  # noqa: ANN001, ANN202
            def on_gpu(*args, **kwargs):  # noqa: ANN202
                self.active += 1
                self.calls += 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.active -= 1
            return on_gpu

        return decorate(task) if task is not None else decorate

    def module(self) -> types.ModuleType:
        m = types.ModuleType("spaces")
        m.GPU = self.GPU  # type: ignore[attr-defined]
        return m


@pytest.fixture()
def spaces(monkeypatch) -> Iterator[StandIn]:  # noqa: ANN001
    stand_in = StandIn()
    monkeypatch.setitem(sys.modules, "spaces", stand_in.module())
    yield stand_in
    runner.install(None)


def test_without_spaces_nothing_is_installed(monkeypatch) -> None:  # noqa: ANN001
    from vitviz.ui.serve import zerogpu

    monkeypatch.setitem(sys.modules, "spaces", None)  # import spaces -> ImportError
    runner.install(None)
    assert zerogpu.install() is False
    assert not runner.installed()


def test_with_spaces_model_calls_go_through_one_decorated_function(spaces: StandIn) -> None:
    from vitviz.ui.serve import zerogpu

    assert zerogpu.install() is True
    assert runner.installed() and spaces.durations == [zerogpu.GPU_SECONDS]

    @runner.runs_model
    def inner(x: torch.Tensor) -> torch.Tensor:
        assert spaces.active == 1 and runner.inside()
        return x * 2

    @runner.runs_model
    def outer(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return inner(x), inner(x + 1)  # nested marked calls run directly, inside the same GPU call

    a, b = outer(torch.ones(2))
    assert spaces.calls == 1 and spaces.active == 0 and not runner.inside()
    assert torch.equal(a, torch.full((2,), 2.0)) and torch.equal(b, torch.full((2,), 4.0))


#: Inputs that differ from the components' defaults (a cheaper or a required value), by endpoint.
OVERRIDES = {
    "token_norms": {2: 1},
    "explain": {5: 2},   # two steps per curve
    "feature_pca": {2: 1},
}

#: The endpoints whose handler runs a model.
HEAVY = ("reconstruct", "sweep", "decoder_provenance", "attention_query", "rollout", "attention_distance",
         "head_atlas", "qk_space", "token_norms", "explain", "feature_pca", "patch_similarity", "layer_probes",
         "tokenize", "beit_predict", "swin_attention", "doctor", "ablate", "logit_lens")


@pytest.fixture(scope="module")
def app():  # noqa: ANN201
    stand_in = StandIn()
    saved = sys.modules.get("spaces")
    sys.modules["spaces"] = stand_in.module()
    try:
        from vitviz.ui import build_demo, serve

        demo = serve.install(build_demo())
        assert runner.installed()
        forwards: list[bool] = []
        hook = torch.nn.modules.module.register_module_forward_pre_hook(
            lambda _m, _a: forwards.append(stand_in.active > 0))
        yield demo, forwards
        hook.remove()
    finally:
        runner.install(None)
        if saved is None:
            sys.modules.pop("spaces", None)
        else:
            sys.modules["spaces"] = saved


def _hidden_patch(ratio: float, seed: int, pattern: str) -> tuple[int, int]:
    from vitviz.mae.provenance import provenance_mask
    from vitviz.models.loading import load_model

    rows, cols = np.nonzero(provenance_mask(load_model("mae-tiny"), ratio, seed, pattern, None).numpy())
    return int(rows[0]), int(cols[0])


@pytest.mark.parametrize("name", HEAVY)
def test_each_heavy_endpoint_runs_its_model_inside_spaces_gpu(app, tmp_path, name: str) -> None:  # noqa: ANN001
    demo, forwards = app
    (fn,) = [f for f in demo.fns.values() if f.api_name == name]
    # a photo no cache has seen, so that the model really runs
    photo = tmp_path / f"{name}.png"
    Image.fromarray(np.random.default_rng(len(name)).integers(0, 256, (230, 250, 3), dtype=np.uint8)).save(photo)
    args = [str(photo) if type(b).__name__ == "Image" else b.value for b in fn.inputs]
    for i, v in OVERRIDES.get(name, {}).items():
        args[i] = v
    if name == "decoder_provenance":
        args[5], args[6] = _hidden_patch(args[2], args[3], args[4])
    if name == "doctor":  # reports of registry models are kept: start from none
        from vitviz.views.doctor import REPORTS

        REPORTS.clear()
    forwards.clear()
    out = fn.fn(*args)
    if inspect.isgenerator(out):
        out = list(out)
    assert forwards, f"{name} ran no model forward pass"
    assert all(forwards), f"{name}: {forwards.count(False)} of {len(forwards)} forward passes outside spaces.GPU"


def test_examples_compute_nothing_at_start_up(app) -> None:  # noqa: ANN001
    """ZeroGPU lends no GPU at start-up: no example is computed then. Every example set only fills its image
    box (Gradio's ``load_example``, no function of vitviz, nothing cached, even with GRADIO_CACHE_EXAMPLES); the
    tab computes when a visitor clicks one, through spaces.GPU."""
    import gradio as gr

    demo, _ = app
    loaders = [fn for fn in demo.fns.values() if fn.fn is not None and inspect.unwrap(fn.fn).__module__ == "gradio.helpers"]
    assert loaders and {inspect.unwrap(fn.fn).__name__ for fn in loaders} == {"load_example"}
    assert all(isinstance(out, gr.Image) for fn in loaders for out in fn.outputs)

"""Warm-up once the app listens: the first visitor's new photo should not pay for what every photo shares.

``python app.py`` starts :func:`start` before ``demo.launch``; its thread waits until the server answers
(so it never delays the page), then loads the tabs' default models where their views run (with model workers:
in the view worker) and prepares what the Features, Explain, BEiT and Swin tabs' first views and a new photo's
views share (:func:`warm`: one function a step, each saying what it computes).

Every tab's default model stays loaded after it (``VITVIZ_MAX_MODELS``, 8 by default).

The thread runs at the lowest CPU priority (:func:`idle_priority`): the kernel gives it a core only when no
visitor's request wants one. On unless ``VITVIZ_WARMUP=0``. Measured in
``bench/README.md``: at normal priority, in a page that opens the tabs right after the
start (``bench/page_waits.py``), the warm-up ran beside them on the two cores and made most of them slower; at
idle priority (the same page run with and without it) no tab was slower beyond the run's spread
and a new photo's Features tab took 1.91 s against 3.29 s. Only caches fill; no result changes, and a failing
step is one log line (the tab computes the same on first use).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("vitviz.ui")

#: Longest wait for the server to listen before the warm-up gives up, in seconds.
WAIT_S = 600.0


def start(demo: Any) -> threading.Thread | None:
    """Run :func:`warm` in a daemon thread once ``demo`` is launched (``demo.is_running``); None when
    ``VITVIZ_WARMUP`` is 0 (the default is 1)."""
    from .. import settings

    if not settings.get("VITVIZ_WARMUP"):
        return None
    thread = threading.Thread(target=_after_launch, args=(demo,), name="vitviz-warmup", daemon=True)
    thread.start()
    return thread


def _after_launch(demo: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not getattr(demo, "is_running", False):
        if time.monotonic() > deadline:
            return
        time.sleep(0.2)
    idle_priority()
    warm()


#: The warm-up thread's nice value: the kernel gives it a core only when no visitor's work wants one.
IDLE_NICE = 19


def idle_priority() -> bool:
    """Run the calling thread at :data:`IDLE_NICE` (Linux: a thread's own nice value), so it never takes a core
    from a visitor's request, on the intra-op threads a visitor's call gets when alone (``VITVIZ_THREADS``):
    oneDNN builds its kernels per thread count, so kernels built on one thread would be built again for the
    visitor's two (about 1.6 s of Explain's first curves, ``bench/page_waits.py``). The threads OpenMP starts for this
    thread are made after the priority is set and inherit it. False where the system does not allow it (the
    thread then runs as it was)."""
    import os

    import torch

    from .. import settings

    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), IDLE_NICE)
    except (AttributeError, OSError):
        return False
    finally:
        torch.set_num_threads(settings.threads())
    return True


def warm() -> None:
    """Prepare the first use of the tabs, one log line a step (a step that fails is skipped)."""
    for name, step in (("models", _models), ("features", _features), ("explain", _explain), ("beit", _beit),
                       ("swin", _swin)):
        t0 = time.perf_counter()
        try:
            what = step()
        except Exception as exc:  # noqa: BLE001 - a warm-up must never stop the app; the tab computes on first use
            log.warning("warm-up (%s) skipped: %s", name, exc)
            continue
        log.info("warm-up (%s): %s in %.1f s", name, what, time.perf_counter() - t0)


def _models() -> str:
    """The tabs' default models in memory where their views run. With model workers the app's process holds each
    model without its weights and a worker loads its own copy at its first call of it, a few tenths of a second
    of a first answer; in the app's process this is the load itself."""
    from ..models.loading import load_choice
    from ..models.runner import resident
    from ..views import attention, features, heads, intervene, patches
    from ..views.common import trained_default
    from .patches_tab import DEFAULT_MODEL as PATCHES_DEFAULT

    names = sorted({trained_default(attention.model_choices(), attention.DEFAULT_MODEL),
                    trained_default(features.model_choices(), features.DEFAULT_MODEL),
                    trained_default(heads.model_choices(), heads.DEFAULT_MODEL),
                    trained_default(patches.model_choices(), PATCHES_DEFAULT),
                    intervene.default_model(intervene.model_choices())} - {None})
    for name in names:
        resident(load_choice(name))
    return f"{', '.join(names)} in memory where their views run"


def _features() -> str:
    """The Features tab's first view (its default model, photo and controls, computed as the tab does: it also
    builds the kernels and chart code a new photo's view uses), and what a new photo's probes share (the example
    photos' tokens and each fit's eigendecomposition, :func:`vitviz.views.features.warm_probes`)."""
    from ..models import runner
    from ..models.costs import Cost
    from ..views import features
    from ..views.common import trained_default
    from ..assets import default_example
    from . import features_tab

    choice, image = trained_default(features.model_choices(), features.DEFAULT_MODEL), default_example()
    with runner.cost(Cost.HEAVY.value):  # where the tab's probes are fitted: with model workers, the heavy one
        features.warm_probes(choice)
    if image is not None:
        other = next((name for name, path in features.example_choices() if path != image), None)
        features_tab.update_all(image, choice, features.depth_of(choice), False, 7, 7, other)
    return f"{choice}'s first view computed, its example-photo probes fitted"


def _explain() -> str:
    """The Explain tab's first view (maps and drop curves of the default photo), computed as the tab does: its
    classifier's curve copy is made and the kernels of every curve length are built (each new token count cost
    ~0.25 s on a process's first use), so a new photo's curves run at once."""
    from ..assets import default_example
    from ..explain.faithfulness import DEFAULT_STEPS
    from ..views import explain
    from . import explain_tab

    choice, image = explain.default_model(explain.model_choices()), default_example()
    if image is None:
        return "no example photo: nothing to do"
    explain_tab.update_maps(image, choice, explain.PREDICTED, explain.ALL)
    explain_tab.update_curves(image, choice, explain.PREDICTED, explain.ALL, "drop", DEFAULT_STEPS)
    return f"{choice}'s first view computed"


def _beit() -> str:
    """What the BEiT tab's first view shares with every photo: its models, the codebook, the examples' codes."""
    from ..models.loading import load_model
    from ..models.runner import resident
    from ..views import beit_pair
    from . import beit_tab

    beit_tab.update_codebook(None)
    for tokenizer, model in beit_pair.PAIRS:
        beit_pair.example_ids(tokenizer)
        resident(load_model(model))
    return f"{len(beit_pair.PAIRS) * 2} models loaded, the codebook and the example photos' codes computed"


def _swin() -> str:
    """The Swin tab's first bias view (stage 1, block 1, head 1: the tab's defaults), which builds swin-tiny."""
    from . import swin_tab

    swin_tab.swin_bias(1, 1, 1)
    return "the first relative-position-bias view computed"

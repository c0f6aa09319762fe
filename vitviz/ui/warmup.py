"""Warm-up once the app listens: the first visitor's new photo should not pay for what every photo shares.

``python app.py`` starts :func:`start` before ``demo.launch``; its thread waits until the server answers
(so it never delays the page), then loads the Features tab's default model and prepares what a new photo's
probes are fitted on (:func:`vitviz.views.features.warm_probes`: the example photos' tokens and each fit's
eigendecomposition). Measured in ``bench/README.md`` (issue 34): without it, the Features tab opened with a
new photo spent most of its time fitting on the example photos. Only caches fill; no result changes, and a
failure is one log line (the tab computes the same on first use).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("vitviz.ui")

#: Longest wait for the server to listen before the warm-up gives up, in seconds.
WAIT_S = 600.0


def start(demo: Any) -> threading.Thread:
    """Run :func:`warm` in a daemon thread once ``demo`` is launched (``demo.is_running``)."""
    thread = threading.Thread(target=_after_launch, args=(demo,), name="vitviz-warmup", daemon=True)
    thread.start()
    return thread


def _after_launch(demo: Any) -> None:
    deadline = time.monotonic() + WAIT_S
    while not getattr(demo, "is_running", False):
        if time.monotonic() > deadline:
            return
        time.sleep(0.2)
    warm()


def warm() -> None:
    """Load the Features tab's default model and fit what a new photo's probes share (one log line)."""
    from ..views import features
    from ..views.common import trained_default

    t0 = time.perf_counter()
    choice = trained_default(features.model_choices(), features.DEFAULT_MODEL)
    try:
        features.warm_probes(choice)
    except Exception as exc:  # noqa: BLE001 - a warm-up must never stop the app; the tab computes on first use
        log.warning("warm-up of %s skipped: %s", choice, exc)
        return
    log.info("warm-up: %s loaded and its example-photo probes fitted in %.1f s", choice, time.perf_counter() - t0)

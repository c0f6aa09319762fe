"""Small per-session state: Gradio's session objects without a copy of the page configuration.

Gradio 6.31 builds, for every new session id, the configuration of every component
(``SessionState.config_values``: the props, values and API schemas of all ~270
blocks, about 470 KB here), and keeps up to 10,000 sessions. A session id is chosen
by the client, so a script opening fresh sessions grew the server by ~0.5 MB per
request. Those copies serve only Gradio's deep links (``/gradio_api/deep_link``),
which vitviz does not use: shareable views are vitviz's own URL query
(:mod:`vitviz.ui.urlstate`). :func:`install` keeps sessions to what they need -- the
values of ``gr.State`` and components a handler replaced -- about 15 KB each, and the
app keeps at most ``VITVIZ_MAX_SESSIONS`` of them (``state_session_capacity``).
"""

from __future__ import annotations

import datetime
import os
from copy import copy
from typing import Any

_INSTALLED = False


def install() -> None:
    """Replace the per-session configuration copies with nothing (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from gradio import state_holder

    cls = state_holder.SessionState

    def __init__(self: Any, blocks: Any) -> None:
        self.blocks_config = copy(blocks.default_config)
        self.config_values = {}  # deep-link snapshots: not kept (vitviz has its own URL state)
        self.state_data = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST", None) else 3600

    def __setitem__(self: Any, key: int, value: Any) -> None:
        from gradio.components import State

        block = self.blocks_config.blocks.get(key)
        if isinstance(block, State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value

    def _no_config(self: Any, *args: Any) -> None:
        return None

    cls.__init__ = __init__
    cls.__setitem__ = __setitem__
    cls._update_config = _no_config
    cls._update_value_in_config = _no_config
    _INSTALLED = True

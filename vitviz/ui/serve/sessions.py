"""Small per-session state: Gradio's session objects without a copy of every block's configuration.

Gradio 6.31 builds, for every new session id, the configuration of every block (the
props, values and API schemas of all ~270 blocks) and keeps up to the capacity ``launch`` is given. A
session id is chosen by the client, so a script opening fresh sessions grew the server by hundreds of kB per
request. Those copies serve only Gradio's deep links (``/gradio_api/deep_link``), which vitviz does not use:
shareable views are vitviz's own URL query (:mod:`vitviz.views.urlstate`). :func:`slim` makes a session that
builds them for no block (those a handler replaces are still kept, as Gradio does); the app keeps at most
``VITVIZ_MAX_SESSIONS`` sessions (``launch(state_session_capacity=...)``). A contact (:mod:`.contacts`).
"""

from __future__ import annotations

from typing import Any


class _NoBlocks:
    """An app seen with no blocks: the new session's per-block configuration copy is empty; all else is the app's."""

    blocks: dict = {}

    def __init__(self, app: Any) -> None:
        self._app = app

    def __getattr__(self, name: str) -> Any:
        return getattr(self._app, name)


def slim(base: type) -> type:
    """A subclass of Gradio's session class ``base`` whose new sessions copy no block's configuration."""

    class SlimSession(base):  # type: ignore[misc, valid-type]
        def __init__(self, blocks: Any) -> None:
            super().__init__(_NoBlocks(blocks))

    return SlimSession

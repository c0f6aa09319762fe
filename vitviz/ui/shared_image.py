"""One image for the whole app: a photo dropped (or an example picked) in any tab is the one every tab shows.

Each tab keeps its own upload box, so a photo can be dropped wherever the user is.
The :class:`SharedImage` hub holds the app's current image as ``(version, path)`` in a
``gr.State`` (one per browser tab). A tab *subscribes* by returning an :class:`ImageInput` from its ``build`` (or a handle
object with an ``image_input`` attribute); the app then calls::

    hub.subscribe(tab, image, examples)

after which

- a user's upload, paste, webcam shot or example click in that tab *publishes* the
  image (the version goes up), and
- selecting the tab *pulls* the shared image into its box when the tab has not seen
  the latest version; the box's own ``change`` listeners then redraw the tab, so a
  tab computes only when it is looked at.

Nothing runs on the server but these two tiny, unqueued functions; the image stays a
path in Gradio's upload cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gradio as gr

from .common import example_images


def default_image() -> str | None:
    """The image every tab starts with: one of the bundled examples (the same one everywhere)."""
    examples = example_images()
    return examples[1] if len(examples) > 1 else (examples[0] if examples else None)


@dataclass
class ImageInput:
    """A tab's image box and its example photos: what a tab's ``build`` returns (or holds as
    ``image_input``) to share the app's image."""

    image: gr.Image
    examples: gr.Examples | None = None

    @property
    def image_input(self) -> ImageInput:
        return self


def input_of(handles: Any) -> ImageInput | None:
    """The :class:`ImageInput` a tab's ``build`` returned (itself, or its ``image_input``), if any."""
    found = getattr(handles, "image_input", None)
    return found if isinstance(found, ImageInput) else None


def publish(value: Any, shared: tuple[int, Any] | None) -> tuple:
    """A user put ``value`` in a tab's box -> the new shared ``(version, path)`` and that tab's seen version.

    An empty box (the user removed the image) publishes nothing: the other tabs keep theirs.
    """
    if value is None or (isinstance(value, str) and not value):
        return gr.skip(), gr.skip()
    version = (shared[0] if shared else 0) + 1
    return (version, value), version


def pull(shared: tuple[int, Any] | None, seen: int | None) -> tuple:
    """A tab was selected -> the shared image for its box, if the tab has not seen this version yet."""
    if not shared or shared[1] is None or seen == shared[0]:
        return gr.skip(), gr.skip()
    return shared[1], shared[0]


class SharedImage:
    """The app's current image, shared by every tab that subscribes.

    Args:
        default: the image every tab starts with (a path, or None).
    """

    def __init__(self, default: str | None) -> None:
        self.default = default
        self.state = gr.State((0, default))
        self.tabs: list[str] = []

    def subscribe(self, tab: gr.Tab, image: gr.Image, examples: gr.Examples | None = None) -> None:
        """Link a tab's image box to the shared image (call inside that tab's ``gr.Tab`` context: the
        tab's own state created here would otherwise sit among the tabs and be drawn as one).

        Args:
            tab: the tab whose selection pulls the shared image.
            image: the tab's image box (``type="filepath"``); it should start at :attr:`default`.
            examples: the tab's example photos, if any: a click publishes like an upload.
        """
        seen = gr.State(0)
        kw: dict[str, Any] = dict(queue=False, api_visibility="private")
        for event in (image.upload, image.input):
            event(publish, [image, self.state], [self.state, seen], **kw)
        if examples is not None and getattr(examples, "load_input_event", None) is not None:
            examples.load_input_event.then(publish, [image, self.state], [self.state, seen], **kw)
        tab.select(pull, [self.state, seen], [image, seen], **kw)
        self.tabs.append(str(getattr(tab, "id", None) or getattr(tab, "label", "")))

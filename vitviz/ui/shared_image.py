"""One image for the whole app: a photo dropped (or an example picked) in any tab is the one every tab shows.

Each tab keeps its own upload box, so a photo can be dropped wherever the user is. A tab
*subscribes* by giving its binder an image box (:func:`image_box`: ``ui.image``, ``ui.examples``
and ``ui.new_image``, :mod:`vitviz.ui.binder`), and the app then calls::

    subscribe(tab, tab_id, ui, opened)

Everything runs in the browser (no server call), with the page's current image held in
``vitviz.image`` of the page module (``vitviz/ui/js/page.js``, per browser tab):

- a user's upload, paste, webcam shot or example click in a tab *publishes* the image
  (its version goes up);
- the tab's own image listeners listen to ``ui.new_image.change``, a hidden *relay* number that
  goes up when the box shows a new image *and the tab is open*: so an image that arrives
  in a closed tab computes nothing (no listener of the tab is on the box's own ``change``);
- selecting the tab runs one handler (:func:`select_js`), which puts a newer image, if any, in the box (the
  relay moves: the tab redraws once) and opens the tab the first time (:mod:`vitviz.ui.lazy`); with nothing
  new, no request reaches the server.

A tab's first views (its ``load`` handlers) must therefore draw everything its
``new_image.change`` listeners draw.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from . import js
from ..assets import default_example
from .common import example_images, hidden, in_page
from .serve.examples import after_example_click


def image_box(ui: Any, tab_id: str, prefix: str, label: str = "Your image (drop, paste or webcam)",
              examples_id: str | None = None, examples_class: str | None = None, with_examples: bool = True,
              **kwargs: Any) -> None:
    """A tab's image box, its example photos and its relay, on the tab's binder: ``ui.image`` (``#PREFIX-input``,
    starting at :func:`vitviz.assets.default_example`), ``ui.examples`` (in a group of ``examples_class`` when
    given) and ``ui.new_image``, the hidden counter whose ``change`` the tab's image listeners listen to (it moves
    once per new image shown while the tab is open). A user's upload, paste, webcam shot, example click or clear
    publishes the image (:func:`publish_js`). ``with_examples=False`` leaves the example photos out
    (``ui.examples`` None: the tab takes the photo shown in any other tab). ``kwargs`` go to ``gr.Image``
    (``height``, ``image_mode``...)."""
    kwargs = {"sources": ["upload", "webcam", "clipboard"], **kwargs}
    image = gr.Image(value=default_example(), type="filepath", label=label, elem_id=f"{prefix}-input", **kwargs)
    examples, found = None, (example_images() if with_examples else [])
    # private: the click that loads an example is the page's, not an API endpoint
    shown: dict[str, Any] = dict(examples=found, inputs=image, label="Example photos", elem_id=examples_id,
                                 api_visibility="private")
    if found and examples_class is None:
        examples = light(gr.Examples(**shown))
    elif found:
        with gr.Group(elem_classes=[examples_class]):
            examples = light(gr.Examples(**shown))
    relay = hidden(gr.Number, 0, f"image-relay-{tab_id}")
    kw: dict[str, Any] = dict(fn=None, inputs=[image, relay], outputs=[relay], js=publish_js(tab_id),
                              queue=False, api_visibility="private")
    gr.on([image.upload, image.input], **kw)
    if examples is not None:
        after_example_click(examples, **{**kw, "js": publish_js(tab_id, clear="example")})
    image.clear(**{**kw, "js": publish_js(tab_id, clear=True)})
    # the box's own change: a refused upload empties it silently
    image.change(**{**kw, "js": publish_js(tab_id, clear="emptied")})
    ui.image, ui.examples, ui.new_image = image, examples, relay


#: What the page's image thumbnail reads of an example's file (Gradio 6.31's image ``Example.svelte`` shows
#: ``value.url``; a click sends only the example's index, and the server loads the photo from its own list).
THUMBNAIL_KEYS = ("url",)


def light(examples: gr.Examples) -> gr.Examples:
    """``examples`` with less than half its page configuration (2.3 KB -> 1 KB for four photos).

    Gradio's example dataset carries, for the page, the input box's every prop (``component_props``: about
    750 bytes, which an image thumbnail never reads) and each photo's whole file record (its server path twice,
    its size, type...). The page's thumbnails need only each file's ``url`` (:data:`THUMBNAIL_KEYS`); the
    click that loads a photo is answered on the server from the examples' own list (``gr.Examples`` keeps its
    processed photos apart from the dataset's samples), so it is unchanged. ``component_props``, ``headers``
    and ``samples`` are ``gr.Dataset``'s constructor arguments, read when the configuration is built.
    """
    dataset = examples.dataset
    dataset.component_props = [{}]
    dataset.headers = []
    dataset.samples = [[{k: v for k, v in cell.items() if k in THUMBNAIL_KEYS} if isinstance(cell, dict) else cell
                        for cell in row] for row in dataset.samples]
    return examples


def publish_js(tab_id: str, clear: bool | str = False) -> str:
    """Browser code of a user's change to a tab's box: ``(image, relay) -> [relay]``: a file (upload, paste,
    webcam, example) becomes the shared image and moves the tab's relay once. ``clear``: False for ``upload`` and
    ``input``, True for the box's ``clear``, ``"emptied"`` for its ``change`` (a refused upload), ``"example"``
    after a click on an example photo (``vitviz.image.publish`` in ``vitviz/ui/js/page.js`` says what each does).
    """
    if clear not in (True, False, "emptied", "example"):
        raise ValueError(f"clear is True, False, 'emptied' or 'example', not {clear!r}")
    return js.read("image_publish", tab=tab_id, clear=clear)


def select_js(tab_id: str) -> str:
    """Browser code of a subscribed tab's ``select``: ``(image, relay, opened) -> [image, relay, opened]``: the
    first time, the latest image goes in the box and the tab opens; later, a newer image and the relay move;
    nothing new, ``undefined`` for both, so nothing runs: the values read at the start would undo an upload made
    while it waited for the page's tab (``vitviz.image.select`` in ``vitviz/ui/js/page.js``)."""
    return js.read("image_select", tab=tab_id)


def subscribe(tab: gr.Tab, tab_id: str, ui: Any, opened: gr.Number) -> None:
    """Pull the shared image into a tab's box when the tab is selected, and open the tab on its first
    selection (call after the tab's ``build``, whose binder has :func:`image_box`'s components).

    Args:
        tab: the tab whose selection pulls the shared image.
        tab_id: the tab's id.
        ui: the tab's binder (``image``, ``new_image``).
        opened: the tab's opener (:func:`vitviz.ui.lazy.opener`).
    """
    parts = [ui.image, ui.new_image, opened]
    in_page(tab.select, parts, select_js(tab_id), parts)

"""The Attention tab's views of a picked model and image, each drawn where its attention is captured.

:func:`drawn` runs one view of :data:`VIEWS` on the image's attention maps (:func:`~.attention.maps_of`) as one
call marked :func:`~vitviz.models.runner.runs_with_model`. In a served app with model workers the capture, its
cache and the drawing (heat overlays, head grids, charts) then all happen in the worker, and only the drawn
view crosses back: a visitor's many queries cost the app's own process -- whose CPU every other visitor's
answers need -- little more than sending the pictures. Without workers the view is simply drawn here, from
the same cache, with the same result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.patches import pixel_to_patch
from ..explain.maps import AttentionMaps
from ..models.loading import LoadedModel, load_choice
from ..models.runner import runs_with_model
from ..render._draw import hw
from . import attention as av
from .attention import AttentionViews, ImageViews, QueryView
from .common import require_image


def _first_query(model: LoadedModel, maps: AttentionMaps, layer: Any, query: str, row: Any, col: Any,
                 head: Any = 0) -> tuple[QueryView, str]:
    q, h = av.shown_query(maps, query, row, col, head)
    return av.query_view(maps, av.layer_value(layer, maps.depth), q, row, col, h), q


def _image(model: LoadedModel, maps: AttentionMaps, mass: bool, head_fusion: str,
           discard_ratio: float) -> ImageViews:
    return ImageViews(**vars(av.class_view(maps, bool(mass))), **vars(av.rollout_view(maps, head_fusion, discard_ratio)),
                      distance=av.distance_view(model, maps), top5=av.top5_value(maps),
                      top5_note=av.top5_note(model, maps))


def _all(model: LoadedModel, maps: AttentionMaps, layer: Any, query: str, row: Any, col: Any, mass: bool,
         head_fusion: str, discard_ratio: float, head: Any = 0) -> AttentionViews:
    view, q = _first_query(model, maps, layer, query, row, col, head)
    return AttentionViews(**vars(view), **vars(_image(model, maps, mass, head_fusion, discard_ratio)), query=q)


def _click(model: LoadedModel, maps: AttentionMaps, x: float, y: float) -> tuple[int, int]:
    h, w = hw(av.view_size(maps))
    r, c = pixel_to_patch(float(x) / w, float(y) / h, maps.layout.grid, 1.0)
    if maps.layout.token_of_patch(r, c) is None:
        raise ValueError(f"Patch (row {r}, col {c}) is hidden by the mask: the encoder never sees it. "
                         "Click a visible patch, or set the masking ratio to 0.")
    return r, c


#: The views :func:`drawn` draws, by name: ``(model, maps, *args) -> view``.
VIEWS: dict[str, Callable[..., Any]] = {
    "query": lambda model, maps, *args: av.query_view(maps, *args),
    "class": lambda model, maps, *args: av.class_view(maps, *args),
    "rollout": lambda model, maps, *args: av.rollout_view(maps, *args),
    "distance": av.distance_view,
    "first_query": _first_query,
    "image": _image,
    "all": _all,
    "click": _click,
}


def drawn(view: str, image: Any, choice: str | None, part: str, ratio: float, seed: Any, native: Any = False,
          side: Any = None, *args: Any) -> Any:
    """View ``view`` of :data:`VIEWS` (``args``: its own arguments) of the picked model's attention for the
    image (``part``, ``ratio``, ``seed``, ``native``, ``side``: :func:`~.attention.maps_of`'s), drawn where the
    model's calls run.

    Raises:
        ValueError: an unknown view (names the valid ones), or the view's own.
    """
    if view not in VIEWS:
        raise ValueError(f"unknown attention view {view!r}; valid: {', '.join(VIEWS)}")
    require_image(image)
    return _drawn(load_choice(choice), view, image, part, ratio, seed, native, side, args)


@runs_with_model
def _drawn(model: LoadedModel, view: str, image: Any, part: str, ratio: float, seed: Any, native: Any,
           side: Any, args: tuple) -> Any:
    """One view drawn from the model's (cached) attention maps: the call a model worker receives whole."""
    return VIEWS[view](model, av.maps_of(model, image, part, ratio, seed, native, side), *args)


def first_query_view(image: Any, choice: str, part: str, mask_ratio: float, seed: Any, layer: Any, query: str,
                     row: Any, col: Any, head: Any = 0, native: Any = False, side: Any = None
                     ) -> tuple[QueryView, str]:
    """The query view of :func:`all_views` alone, and the query token it shows (:func:`~.attention.shown_query`):
    what a tab's first showing draws before the rest (:func:`image_views`)."""
    return drawn("first_query", image, choice, part, mask_ratio, seed, native, side, layer, query, row, col, head)


def image_views(image: Any, choice: str, part: str, mask_ratio: float, seed: Any, mass: bool, head_fusion: str,
                discard_ratio: float, native: Any = False, side: Any = None) -> ImageViews:
    """Every view of :func:`all_views` but the query's (one capture, then lookups)."""
    return drawn("image", image, choice, part, mask_ratio, seed, native, side, mass, head_fusion, discard_ratio)


def all_views(image: Any, choice: str, part: str, mask_ratio: float, seed: Any, layer: Any, query: str, row: Any,
              col: Any, mass: bool, head_fusion: str, discard_ratio: float, head: Any = 0, native: Any = False,
              side: Any = None) -> AttentionViews:
    """Every view for the current controls, in one call (one capture, then lookups): the query view of
    :func:`first_query_view` and :func:`image_views`."""
    return drawn("all", image, choice, part, mask_ratio, seed, native, side, layer, query, row, col, mass,
                 head_fusion, discard_ratio, head)


def patch_at_click(image: Any, choice: str, part: str, mask_ratio: float, seed: Any, x: float, y: float,
                   native: Any = False, side: Any = None) -> tuple[int, int]:
    """The visible patch under a click at ``(x, y)`` of the query overlay.

    Raises:
        ValueError: the patch is hidden by the mask (the encoder never sees it).
    """
    return drawn("click", image, choice, part, mask_ratio, seed, native, side, x, y)

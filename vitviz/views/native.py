"""A photo at its own shape in the views: the resolution choices, their checks and the cost shown before a run.

The library side is :mod:`vitviz.embedding.native` (the position table each model needs) and
:func:`vitviz.core.images.native_view` (the view); the numbers of the cost come from
:func:`vitviz.compute.grid_cost.grid_cost`. No gradio here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import settings
from ..errors import ModelUnavailable
from ..compute.grid_cost import grid_cost, most_patch_tokens
from ..core.images import image_size, native_size
from ..core.patches import grid_size
from ..embedding.native import METHODS, supports_native
from ..features.layer_tokens import LayerTokens
from ..features.pca import foreground_pca_maps, joint_pca_maps
from ..models.costs import Cost, model_cost
from ..models.loading import LoadedModel, load_choice
from ..render._draw import panel_size
from ..render.features import pca_pair

#: Longer sides offered, in pixels (224: the square's size; 518: DINOv2's training size; 644: 46 patches of 14).
SIDES: tuple[int, ...] = (224, 336, 448, 518, 644)
DEFAULT_SIDE = 644
#: A run over more patch tokens than this is declared heavy (:func:`native_cost`): the 448-px square,
#: which dinov2-small-448 already serves as a view.
HEAVY_PATCH_TOKENS = 1024
#: Longer side of each panel (photo, map) of the PCA view of a photo at its own shape.
PCA_PANEL = 448


def max_side() -> int:
    """The longest side offered: ``VITVIZ_NATIVE_MAX_SIDE``; auto 448 on a public host, else 644."""
    side = settings.get("VITVIZ_NATIVE_MAX_SIDE")
    return side if side is not None else (448 if settings.public() else 644)


def side_choices() -> list[str]:
    """The sides offered (as the dropdown's values), up to :func:`max_side`."""
    cap = max_side()
    return [str(s) for s in SIDES if s <= cap] or [str(SIDES[0])]


def default_side() -> str:
    """The largest offered side up to :data:`DEFAULT_SIDE`."""
    return [s for s in side_choices() if int(s) <= DEFAULT_SIDE][-1]


def check_side(side: Any) -> int:
    """A side from the page or the API: one of :func:`side_choices` (None: :func:`default_side`).

    Raises:
        ValueError: naming the valid sides (the cap of a public host included).
    """
    valid = side_choices()
    if side is None or side == "":
        return int(default_side())
    try:
        s = int(float(side))
    except (TypeError, ValueError):
        s = -1
    if str(s) not in valid:
        raise ValueError(f"the resolution must be one of {', '.join(valid)} px, got {side!r}"
                         f" (this host allows at most {max_side()} px)")
    return s


def native_of(model: LoadedModel, native: Any, side: Any) -> int | None:
    """The longer side to run ``model`` at its photo's shape, or None for the square view (the switch off,
    or a model without a variable grid). A bad side raises even when unused, so the page's value is checked."""
    s = check_side(side) if native else None
    return s if s is not None and supports_native(model) else None


def heavy(side: Any, patch: int = 14) -> bool:
    """Whether a native run at ``side`` may pass :data:`HEAVY_PATCH_TOKENS` (its largest grid: a square photo)."""
    try:
        return most_patch_tokens(check_side(side), patch) > HEAVY_PATCH_TOKENS
    except ValueError:
        return True


def cost_note(image: Any, choice: str | None, native: Any, side: Any) -> str:
    """What the chosen view costs, before it runs: the grid, the patch tokens and the attention products
    against the model's square input (closed form). A sentence for every state of the switch; an
    unavailable model gives an empty note, since the tab's view already says why (one message, not two)."""
    try:
        model = load_choice(choice)
    except ModelUnavailable:
        return ""
    if not native:
        gh, gw = model.grid
        return (f"Square view: the photo's shorter side to {model.input_size} px, centre-cropped "
                f"({gh}×{gw} = {gh * gw:,} patch tokens).")
    if not supports_native(model):
        return f"*{model.name} runs only on its square input: the square view is shown.*"
    s = check_side(side)
    p = model.patch_size
    if image is None or (isinstance(image, str) and not image):
        return f"Photo's own shape at {s} px: drop a photo to see its grid."
    w, h = image_size(image)
    grid = grid_size(*native_size(w, h, s, p), p)
    module: Any = model.architecture
    dim, depth = int(module.pos_embed.shape[-1]), len(module.blocks)
    c = grid_cost(grid, model.grid, dim, depth, prefix=1 + int(getattr(module, "dist_token", None) is not None))
    kind = "heavy: it waits for the heavy queue" if c.patch_tokens > HEAVY_PATCH_TOKENS else "a quick view"
    return (f"Photo's own shape, longer side {s} px: a **{grid[1]}×{grid[0]}** grid (columns × rows) = "
            f"**{c.patch_tokens:,} patch tokens**, {c.token_ratio:.1f}× the {c.base_patch_tokens:,} of the "
            f"{model.input_size}-px square; attention grows with the square of the tokens: "
            f"**{c.attention_ratio:.{0 if c.attention_ratio >= 10 else 1}f}×** the square's attention products, "
            f"{c.flops_ratio:.1f}× its whole forward pass ({kind}). Positions: "
            f"{METHODS[model.family]}.")


def native_pca(lt: LayerTokens, li: int, foreground: bool, tag: str = "") -> tuple[np.ndarray, str]:
    """The PCA colours of one photo at its own shape at layer ``li``, fitted on its own tokens: (photo | map,
    caption). ``tag`` follows the layer's name (`` (random weights)``)."""
    grid = lt.patch_grid(li)
    if foreground:
        maps, masks = foreground_pca_maps([grid])
        extra = f" Foreground share {100 * masks[0].mean():.0f}%."
    else:
        maps, extra = joint_pca_maps([grid]), ""
    h, w = lt.image.shape[:2]
    gh, gw = lt.layouts[li].grid
    panel = pca_pair(f"this photo at its own shape · {w}x{h} px", lt.image,
                     f"PCA of its tokens · {gw}x{gh} patches", maps.rgb[0], panel_size(lt.image.shape, PCA_PANEL))
    ev = maps.basis.explained
    text = (f"**{lt.names[li]}** (layer {li} of {lt.num_layers - 1}){tag} · the photo at its own shape, "
            f"uncropped: {gw}×{gh} patches (columns × rows) of {lt.patch_size(li)} px, {grid.shape[-1]} channels. "
            f"PCA fitted on this photo's {maps.basis.num_tokens:,} tokens alone: the three components hold "
            f"{100 * ev[0]:.1f}%, {100 * ev[1]:.1f}% and {100 * ev[2]:.1f}% of the variance (red, green, blue).{extra}")
    return panel, text


def native_cost(model_at: int, native_at: int, side_at: int) -> Callable[[list[Any]], Cost]:
    """A computed cost for a view that may take a photo at its own shape: HEAVY while the model at input
    ``model_at`` is not in memory (as :func:`model_cost`), or when the switch at ``native_at`` is on and the
    side at ``side_at`` may pass :data:`vitviz.views.native.HEAVY_PATCH_TOKENS` patch tokens (its square
    photo's grid, closed form: :func:`vitviz.compute.grid_cost.most_patch_tokens`); VIEW otherwise."""
    loaded = model_cost(model_at)

    def computed(values: list[Any]) -> Cost:
        if loaded(values) is Cost.HEAVY:
            return Cost.HEAVY
        on = values[native_at] if native_at < len(values) else None
        side = values[side_at] if side_at < len(values) else None
        return Cost.HEAVY if on is not False and (on is None or heavy(side)) else Cost.VIEW

    computed.base = Cost.VIEW  # type: ignore[attr-defined]
    return computed

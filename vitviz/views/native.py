"""A photo at its own shape in the views: the resolution choices, their checks and the cost shown before a run.

The library side is :mod:`vitviz.embedding.native` (the position table each model needs) and
:func:`vitviz.core.images.native_view` (the view); the numbers of the cost come from
:func:`vitviz.compute.grid_cost.grid_cost`. No gradio here.
"""

from __future__ import annotations

from typing import Any

from .. import settings
from ..compute.grid_cost import grid_cost, most_patch_tokens
from ..core.images import image_size, native_size
from ..core.patches import grid_size
from ..embedding.native import METHODS, supports_native
from ..models.loading import LoadedModel, load_choice

#: Longer sides offered, in pixels (224: the square's size; 518: DINOv2's training size; 644: 46 patches of 14).
SIDES: tuple[int, ...] = (224, 336, 448, 518, 644)
DEFAULT_SIDE = 644
#: A run over more patch tokens than this is declared heavy (:mod:`vitviz.ui.serve.costs`): the 448-px square,
#: which dinov2-small-448 already serves as a view.
HEAVY_PATCH_TOKENS = 1024


def side_choices() -> list[str]:
    """The sides offered (as the dropdown's values), up to ``VITVIZ_NATIVE_MAX_SIDE``."""
    cap = settings.native_max_side()
    return [str(s) for s in SIDES if s <= cap] or [str(SIDES[0])]


def default_side() -> str:
    """The largest offered side up to :data:`DEFAULT_SIDE`."""
    return [s for s in side_choices() if int(s) <= DEFAULT_SIDE][-1]


def check_side(side: Any) -> int:
    """A side from the page or the API: one of :func:`side_choices`.

    Raises:
        ValueError: naming the valid sides (the cap of a public host included).
    """
    valid = side_choices()
    try:
        s = int(float(side))
    except (TypeError, ValueError):
        s = -1
    if str(s) not in valid:
        raise ValueError(f"the resolution must be one of {', '.join(valid)} px, got {side!r}"
                         f" (this host allows at most {settings.native_max_side()} px)")
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
    against the model's square input (closed form). A sentence for every state of the switch."""
    model = load_choice(choice)
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
    module: Any = model.module
    dim, depth = int(module.pos_embed.shape[-1]), len(module.blocks)
    c = grid_cost(grid, model.grid, dim, depth, prefix=1 + int(getattr(module, "dist_token", None) is not None))
    kind = "heavy: it waits for the heavy queue" if c.patch_tokens > HEAVY_PATCH_TOKENS else "a quick view"
    return (f"Photo's own shape, longer side {s} px: a **{grid[1]}×{grid[0]}** grid (columns × rows) = "
            f"**{c.patch_tokens:,} patch tokens**, {c.token_ratio:.1f}× the {c.base_patch_tokens:,} of the "
            f"{model.input_size}-px square; attention grows with the square of the tokens: "
            f"**{c.attention_ratio:.{0 if c.attention_ratio >= 10 else 1}f}×** the square's attention products, "
            f"{c.flops_ratio:.1f}× its whole forward pass ({kind}). Positions: "
            f"{METHODS[model.family]}.")

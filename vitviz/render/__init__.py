"""Images as ``uint8`` arrays ``(H, W, 3)``: one drawing toolkit (:mod:`._draw`) and one
module per subject. numpy plus PIL (for text only); no plotting library, no global state.
Renderers import only :mod:`vitviz.core` and result dataclasses."""

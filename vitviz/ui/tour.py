"""The guided tour: one step per idea, each opening its tab with the right photo and controls.

The steps are data (:class:`Step`, in :data:`STEPS`); the page walks them with the tour bar's
Back and Next buttons (``vitviz/ui/js/tour.js``, part of the page module ``window.vitviz``):
a step opens its tab, puts its example photo in the tab's box (unless the tab already shows
it), sets its controls, waits for its own output (:attr:`Step.ready`: an element's text that
only this step's settings produce), brings its key visual into view and says what to notice.
Idle, the bar is its Start button, beside the tab buttons; while a step runs it is one line at
the top of the window (over the intro, never over the tab's views: a step's key visual is brought
into view below it), and ``End`` folds it back to its Start button.

Adding a step is one line in :data:`STEPS`. Steps name components by their ``elem_id``;
controls are sliders, numbers, radios and checkboxes (what the page can set like a person
does: the value typed or clicked, then the component's own events).
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass, field

import gradio as gr

#: The example photo every step shows unless it names another (``assets/examples/<name>.jpg``).
PHOTO = "chelsea"


@dataclass(frozen=True)
class Step:
    """One idea of the tour.

    Attributes:
        tab: the id of the tab it opens (``TAB_ID`` of a ``vitviz/ui/*_tab.py``).
        title: a few words, shown as "Step k of n · title".
        notice: what to notice, one or two sentences in plain text (the page never reads it as HTML).
        output: ``elem_id`` of the step's key visual: brought into view once the step is ready.
        ready: ``(elem_id, text)``: the step is ready when that element's text contains ``text``,
            which only the step's photo and controls produce (the tour's browser test waits on it).
        controls: ``(elem_id, value)`` pairs set in order: a slider or number gets the value, a radio
            the choice of that label, a checkbox the boolean.
        photo: the example photo's name (no ``.jpg``), or ``None`` for a tab without a photo.
    """

    tab: str
    title: str
    notice: str
    output: str
    ready: tuple[str, str]
    controls: tuple[tuple[str, float | int | str | bool], ...] = field(default_factory=tuple)
    photo: str | None = PHOTO


#: The tour, in order: from pixels to tokens, to attention and what it explains, to masked image modeling.
STEPS: tuple[Step, ...] = (
    Step("patches", "A photo becomes a sequence",
         "Each square of the grid is one patch, flattened and projected to one token: the readout counts them. "
         "Click a patch to follow it into the token strip below.",
         output="patches-overlay", ready=("patches-readout", "Grid 14 × 14 patches of 16 px"),
         controls=(("patches-size", 16),)),
    Step("attention", "Where one patch looks, layer 1",
         "The red box is the query patch; the left map is where it looks (mean over heads), the right one each "
         "head on its own. See whether the heads of this first layer stay near the query.",
         output="attn-query-overlay", ready=("attn-query-info", "Layer 1 of"),
         controls=(("attn-row", 7), ("attn-col", 7), ("attn-head", 0), ("attn-layer", 1))),
    Step("attention", "The same patch, deeper",
         "The same query a few blocks higher: compare the maps with layer 1's (wider or narrower?). "
         "The → key steps on through the layers.",
         output="attn-query-overlay", ready=("attn-query-info", "Layer 6 of"),
         controls=(("attn-layer", 6),)),
    Step("heads", "Every head at once",
         "Each cell is one head, coloured by its type under the stated rule; the line above the grid counts them "
         "for this model. Click a cell to open that head in the Attention tab.",
         output="heads-grid", ready=("heads-info", "heads over this image")),
    Step("explain", "Which patches made it say this?",
         "Four maps answer the same question and often disagree; the curves below test each by removing the "
         "patches it ranks first. The model note says whose decision it is: dinov2-small-lab8 (a real classifier of "
         "8 classes) where its weights are here; random weights explain no learned decision.",
         output="explain-maps", ready=("explain-maps-info", "explains")),
    Step("features", "What the tokens hold",
         "One colour is one direction of the token space, fitted over all four photos together: parts that "
         "share a colour across photos are alike for this layer.",
         output="feat-pca", ready=("feat-pca-info", "Joint PCA")),
    Step("mae", "Hide three quarters, paint them back",
         "The encoder saw only the visible quarter; the decoder painted the grey patches back. The error map "
         "(bright = worse) shows which hidden patches it got least right.",
         output="panel-error", ready=("mae-metrics", "(147 hidden)"),
         controls=(("mae-ratio", 0.75),)),
    Step("mae", "Hide even more",
         "At 90% hidden the encoder gets a handful of patches: watch what survives in the rebuild and how the "
         "error and the FLOPs readout change.",
         output="panel-pasted", ready=("mae-metrics", "(176 hidden)"),
         controls=(("mae-ratio", 0.9),)),
    # Live camera (issue 30, a section of the MAE tab): its step goes here, after the MAE steps, once the
    # camera section is on main.
    Step("beit", "Visual tokens",
         "The tokenizer turns every patch into one of its codes (the id in each square); the right panel is the "
         "image rebuilt from those codes alone: what the vocabulary keeps and loses.",
         output="beit-token-map", ready=("beit-token-text", "Round trip")),
    Step("beit", "Guess the hidden tokens",
         "BEiT hides blocks of patches and classifies each hidden one over the codebook: green is the right "
         "token, amber in the top 5, red wrong; the line above says how often it beats chance.",
         output="beit-correct", ready=("beit-predict-text", "Token accuracy")),
    Step("beit", "Two kinds of visual words",
         "Below, the same photo in pixel codes (vq-tiny) and in semantic codes distilled from DINOv2 (vq-kd-tiny, "
         "BEiT v2's tokenizer): semantic codes follow objects, pixel codes colours. Both BEiT models then guess "
         "the same hidden blocks, each against copying the nearest visible code.",
         output="beit-kinds", ready=("beit-kinds-text", "Two kinds of visual words")),
    Step("pretraining", "Does pretraining pay off?",
         "Each curve is a linear classifier on an encoder's frozen features, fitted with 1 to all labelled photos "
         "per class: a pretrained encoder sits above its own random-weight twin (dashed) and far above chance. "
         "The sentence above says whether a ViT from scratch loses to a CNN here.",
         output="pre-probe", ready=("pre-probe-info", "chance is"), photo=None),
    Step("swin", "Windows that shift",
         "Attention stays inside each window; the middle view shifts the windows, the right one shows how "
         "Swin rolls the image so the shifted windows line up again. Click a token to follow it.",
         output="swin-shifted", ready=("swin-info", "stage 1")),
    Step("compute", "Why windows scale",
         "Global attention's cost grows with the square of the token count, windowed attention's linearly: "
         "read the gap between the two lines, and measure it on this machine at the bottom of the tab.",
         output="plot-attention-flops", ready=("classic-table", "windowed 7×7"), photo=None),
)


def check(steps: tuple[Step, ...], tab_ids: tuple[str, ...]) -> None:
    """Refuse steps that name a tab the app lacks (a sentence naming the step).

    Raises:
        ValueError: a step's tab is not one of ``tab_ids``.
    """
    for i, step in enumerate(steps, start=1):
        if step.tab not in tab_ids:
            raise ValueError(f"tour step {i} ({step.title!r}) opens tab {step.tab!r}, which is not one of "
                             f"{', '.join(tab_ids)}")


def steps_json(steps: tuple[Step, ...] = STEPS) -> str:
    """The steps as the page reads them (a JSON list of :class:`Step` fields)."""
    return json.dumps([asdict(s) for s in steps], ensure_ascii=False)


def build(tab_ids: tuple[str, ...], steps: tuple[Step, ...] = STEPS) -> gr.HTML:
    """The tour bar (call in the page header): a Start button; the page module runs the steps.

    Args:
        tab_ids: the app's tab ids (each step must open one of them).
        steps: the tour.
    """
    check(steps, tab_ids)
    bar = (f'<div class="vitviz-tour" data-steps="{html.escape(steps_json(steps), quote=True)}">'
           f'<button type="button" class="vitviz-tour-start" id="tour-start" title="{len(steps)} steps, one idea each">'
           'Guided tour &#9656;</button></div>')
    return gr.HTML(bar, elem_id="tour", elem_classes=["vitviz-secondary"], padding=False)

"""The Ablation & lens tab: switch heads or tokens off and compare; rank a layer's heads; the logit lens.

Its views come from :mod:`vitviz.views.intervene`. The heads switched off are a text field (``"11.2, 8.4"``,
layer.head from 0) that the buttons edit and the URL's ``heads=`` sets.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from ..views import heads as hv
from ..views import intervene as iv
from ..views.intervene import AblationView, LensView, RankingView
from . import helptext, js, urlstate
from .binder import Binder
from .common import fit_slider, handler, help_text, in_page, picture, shown_if, signal, user_errors
from ..models.costs import Cost, cost, model_cost
from .shared_image import image_box

TAB_ID, LABEL = "intervene", "Ablate"


@handler(model_cost(1))
def ablate(image: str | None, model: str, heads_off: str = "", tokens: str = "", mode: str = "zero") -> AblationView:
    """Endpoint ``ablate``: the photo through the model plainly and with heads or tokens removed.

    Args:
        image: the photo (a file path or URL).
        model: a ViT, DeiT, DINO(v2), dinov2-small-lab8 or MAE name (``name:random`` for random weights).
        heads_off: heads to switch off, ``"LAYER.HEAD, ..."`` counted from 0 (empty: none).
        tokens: tokens no other token reads: ``cls``, ``high-norm``, ``ROW:COL`` patches, comma separated.
        mode: ``zero`` or ``mean`` (held at their mean over the example photos).

    Returns:
        A before/after chart (Plotly), the class-token attention and rollout before and after (an MAE: its
        reconstruction too) as one image, and a measured sentence.
    """
    return iv.ablation_view(image, model, heads_off, tokens, mode)


@handler(model_cost(1))
def show(image: str | None, model: str, heads_off: str, tokens: str, mode: str, try_head: bool, layer: float,
         head: float) -> AblationView:
    """The page's view: :func:`ablate`, with the head at the sliders switched off too while ``try_head`` is ticked."""
    if try_head:
        heads_off = iv.edit_heads(model, heads_off, layer, head, "off")
    return iv.ablation_view(image, model, heads_off, tokens, mode)


@handler(Cost.HEAVY)
def rank(image: str | None, model: str, layer: float, mode: str, progress: gr.Progress = gr.Progress()) -> RankingView:
    """Every head of ``layer`` removed alone, ranked by how much that moves the output (one forward per head)."""
    progress(0.0, desc="Removing each head in turn")
    return iv.ranking_view(image, model, layer, mode, progress=lambda f, m: progress(f, desc=m))


@handler(model_cost(1))
def logit_lens(image: str | None, model: str) -> LensView:
    """Endpoint ``logit_lens``: every block's output read through the final norm and head (an MAE: the
    decoder's picture by layer).

    Returns:
        The probability of the final answer by layer (Plotly), the MAE decoder's pictures (else none), and
        a sentence with the top-3 by layer.
    """
    v = iv.lens_view(image, model)
    return replace(v, lens_pictures=shown_if(v.lens_pictures))


@handler(model_cost(1))
def show_tried(image: str | None, model: str, heads_off: str, tokens: str, mode: str, try_head: bool, layer: float,
               head: float) -> AblationView:
    """A slider moved: the view again while the sliders' head is being tried, else nothing changes."""
    if not try_head:
        return AblationView(gr.skip(), gr.skip(), gr.skip())
    return show(image, model, heads_off, tokens, mode, try_head, layer, head)


@dataclass(frozen=True)
class Edited(AblationView):
    """A button's answer: the views with the new list of heads switched off, and that list."""

    heads_off: str


def _editor(action: str) -> Any:
    @cost(model_cost(1))
    @user_errors
    def edit(image: str | None, model: str, heads_off: str, tokens: str, mode: str, try_head: bool, layer: float,
             head: float) -> Edited:
        heads = iv.edit_heads(model, heads_off, layer, head, action)
        return Edited(**vars(show(image, model, heads, tokens, mode, try_head, layer, head)), heads_off=heads)

    edit.__name__ = f"heads_{action}"
    return edit


@dataclass(frozen=True)
class Went(AblationView):
    """A head clicked in the Heads atlas, switched off here: the views with it (skipped when the model changes: its
    ``change`` recomputes everything), the model, the heads switched off, the sliders on that head."""

    model: Any
    heads_off: str
    layer: Any
    head: Any


@handler(model_cost(1))
def on_goto(goto: str | None, image: str | None, model: str, heads_off: str, tokens: str, mode: str) -> Went:
    """A head clicked in the Heads atlas (``{"model", "layer", "head"}``, 1-based as the atlas counts, from the
    page's ``vitviz.ablate.goto``) -> that head added to the heads switched off (``LAYER.HEAD`` from 0); the
    atlas's model becomes this tab's, with only that head off, when it differs."""
    target, layer, head = hv.parse_goto(goto)
    changed = target is not None and target != model
    if changed:
        if target not in [v for _, v in iv.model_choices()]:
            raise ValueError(f"{target} cannot be ablated here; pick one of this tab's models")
        model, heads_off = target, ""
    depth, heads = iv.head_range(model)
    if layer > depth or head > heads:
        raise ValueError(f"{model} has {depth} layers of {heads} heads; the atlas sent layer {layer}, head {head}")
    off = iv.edit_heads(model, heads_off, layer - 1, head - 1, "off")
    views = (AblationView(gr.skip(), gr.skip(), gr.skip()) if changed
             else show(image, model, off, tokens, mode, False, layer - 1, head - 1))
    return Went(**vars(views), model=model, heads_off=off, layer=gr.update(maximum=depth - 1, value=layer - 1),
                head=gr.update(maximum=heads - 1, value=head - 1))


#: The Heads atlas's click on a head when set to switch it off (``vitviz.ablate.goto`` in
#: ``vitviz/ui/js/page.js``): once this tab is shown and its views rest, the head arrives in this hidden
#: component's value, which fires its ``change``.
GOTO_JS = js.read("ablate_goto")


@dataclass(frozen=True)
class Everything(AblationView, LensView):
    """Every view of the tab at once (the page load, a new model or photo): ablation, lens, pickers, help."""

    layer: Any
    head: Any
    help_intro: str
    help_ablation: str
    help_lens: str


@handler(model_cost(1))
def update_all(image: str | None, model: str, heads_off: str, tokens: str, mode: str, try_head: bool, layer: float,
               head: float) -> Everything:
    """The pickers fitted to the model (values kept when they fit), then the ablation and the lens. The two help
    sections come with this first answer rather than in the page's configuration, which stays small."""
    depth, heads = iv.head_range(model)
    lay, hd = fit_slider(layer, 0, depth - 1, depth - 1), fit_slider(head, 0, heads - 1)
    ab = show(image, model, heads_off, tokens, mode, try_head, lay["value"], hd["value"])
    return Everything(**vars(ab), **vars(logit_lens(image, model)), layer=lay, head=hd,
                      help_intro=helptext.read(TAB_ID, "intro"), help_ablation=helptext.read(TAB_ID, "ablation"),
                      help_lens=helptext.read(TAB_ID, "lens"))


def build(demo: gr.Blocks) -> Binder:
    """Create the tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = iv.model_choices()
    default = iv.default_model(choices)
    ui.help_intro = help_text("", elem_id="intervene-intro")
    with gr.Row():
        with gr.Column(scale=1, min_width=260):
            # no example photos of its own (the page configuration stays small): a photo picked in any other tab comes here
            image_box(ui, TAB_ID, "intervene", height=200, image_mode=None, with_examples=False)
            ui.model = gr.Dropdown(choices=choices, value=default, label="Model", elem_id="intervene-model")
            ui.mode = gr.Radio(iv.MODES, value="zero", label="Switch off by", elem_id="intervene-mode")
            ui.tokens = gr.Dropdown(iv.TOKEN_CHOICES, value="", label="Tokens nobody reads",
                                    elem_id="intervene-tokens")
        with gr.Column(scale=3):
            with gr.Row(equal_height=True):
                ui.layer = gr.Slider(0, 11, value=11, step=1, label="Layer (from 0)", elem_id="intervene-layer")
                ui.head = gr.Slider(0, 5, value=0, step=1, label="Head (from 0)", elem_id="intervene-head")
            with gr.Row():
                off = gr.Button("Switch this head off", variant="primary", elem_id="intervene-off", size="md")
                layer_off = gr.Button("Knock out the layer", elem_id="intervene-layer-off", size="md")
                only = gr.Button("Keep only this head", elem_id="intervene-only", size="md")
                reset = gr.Button("All back on", elem_id="intervene-reset", size="md")
            with gr.Row(equal_height=False):
                with gr.Column(scale=3):
                    ui.ab_chart = gr.Plot(label="before and after", elem_id="intervene-chart", show_label=False)
                with gr.Column(scale=2, min_width=280):
                    ui.ab_text = gr.Markdown(elem_id="intervene-info")
                    ui.heads_off = gr.Textbox("", label="Heads switched off (layer.head, from 0; Enter applies)",
                                              elem_id="intervene-heads")
                    ui.try_head = gr.Checkbox(False, label="Also switch off the head at the sliders (try it)",
                                              elem_id="intervene-try")
            ui.ab_panels = picture("attention before and after", "intervene-panels", show_label=False)
            ui.help_ablation = help_text("", elem_id="intervene-help")
            gr.Markdown("### Which heads of this layer matter?")
            rank_button = gr.Button("Rank this layer's heads (one pass per head)", elem_id="intervene-rank")
            ui.rank_text = gr.Markdown(elem_id="intervene-rank-info")
            ui.rank_chart = gr.Plot(label="heads ranked", elem_id="intervene-rank-chart", show_label=False)
            gr.Markdown("### The logit lens: the answer, read after every block")
            ui.lens_chart = gr.Plot(label="lens by layer", elem_id="intervene-lens-chart", show_label=False)
            ui.lens_text = gr.Markdown(elem_id="intervene-lens-info")
            ui.lens_pictures = picture("decoder by layer", "intervene-lens-pictures", show_label=False, visible=False,
                                       buttons=None)
            ui.help_lens = help_text("", elem_id="intervene-lens-help")
    ui.goto = signal(GOTO_JS, "intervene-goto")

    ui.endpoint(ablate, api_name="ablate")
    ui.endpoint(logit_lens, api_name="logit_lens")
    view = ui.bind(show)
    demo.load(**ui.bind(update_all, quick=False))
    gr.on([ui.model.change, ui.new_image.change], **ui.bind(update_all))
    gr.on([ui.heads_off.submit, ui.mode.change, ui.tokens.change, ui.try_head.change], **view)
    gr.on([ui.layer.release, ui.head.release], **ui.bind(show_tried))
    for button, action in ((off, "off"), (layer_off, "layer"), (only, "only"), (reset, "reset")):
        button.click(**ui.bind(_editor(action), quick=False))
    rank_button.click(**ui.bind(rank, quick=False, show_progress="full"))
    ui.goto.change(**ui.bind(on_goto))
    in_page([ui.model.change, ui.heads_off.change], [ui.model, ui.heads_off], urlstate.ABLATION_JS)
    ui.follow_url(("model", "layer", "heads_off"), iv.url_controls)
    return ui

"""The Pretraining tab: linear probes on frozen features against the number of labels, and the
shipped fine-tuning and from-scratch runs beside them, with a verdict computed from their logs.

Wiring only: every figure, table and sentence comes from :mod:`vitviz.views.pretraining`.
No encoder runs here: the probes read features computed once and shipped
(``assets/labelled/features``), the trained runs their shipped logs.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import plotly.graph_objects as go

from ..views import pretraining as v
from . import urlstate
from .common import endpoint, memo_view, user_errors
from .js import read as read_js
from .serve.costs import Cost, cost

TAB_ID, LABEL = "pretraining", "Pretraining"
TOUR_TITLE = "Pretraining"
TOUR_TEXT = ("With only a few labelled photos, does a pretrained encoder beat training from scratch? Linear probes "
             "on frozen features, fine-tuning, a ViT and a CNN from scratch, on the same 8 classes.")

#: Page styles: the verdict is the tab's answer, read from the back of the room.
CSS = """
#pre-verdict, #pre-verdict .prose { font-size: 1.3rem !important; line-height: 1.45; }
#pre-probe-table table, #pre-recipes table { font-size: 1rem; }
"""

#: Encoders shown when the tab opens (those on disk among them).
DEFAULT_ENCODERS = ("dinov2-small", "dinov2-small-random", "mae-tiny", "mae-tiny-random", "beit-tiny")


def default_encoders(choices: list[tuple[str, str]]) -> list[str]:
    """The default encoders that have features here (else every one there is)."""
    have = [k for _, k in choices]
    return [k for k in DEFAULT_ENCODERS if k in have] or have


@memo_view(32)
def _probe(encoders: list[str], depth: str, pooling: str) -> tuple:
    return v.probe_view(encoders, depth, pooling)


# Cost: a curve reads cached features and solves 21 small least-squares problems per encoder (closed
# form, at most 172 photos); no encoder runs, so it is a view, not a heavy probe.
@cost(Cost.VIEW)
@user_errors
def linear_probe(encoders: list[str], depth: str, pooling: str,
                 progress: gr.Progress = gr.Progress()) -> tuple[go.Figure, str, str]:
    """Endpoint ``linear_probe``: (encoder keys, depth share, pooling) -> (curves figure, table, caption).

    ``encoders``: feature keys such as ``dinov2-small`` or ``mae-tiny-random``; ``depth``: ``last``,
    ``3/4``, ``1/2``, ``1/4`` or ``0`` (the embedding); ``pooling``: ``cls`` or ``avg``.
    """
    progress(0, desc="fitting the probes")
    return _probe(list(v.check_encoders(encoders)), v.check_depth(depth), v.check_pooling(pooling))


@memo_view(2)
def _protocols(pooling: str) -> tuple:
    return v.protocols_view(pooling)


@cost(Cost.VIEW)
@user_errors
def protocols(pooling: str) -> tuple[go.Figure, go.Figure, str, str]:
    """Every protocol with all labels, the training curves, their recipes and the verdict (private)."""
    return _protocols(v.check_pooling(pooling))


@cost(Cost.VIEW)
def on_load(encoders: list[str], depth: str, pooling: str, request: gr.Request) -> tuple:
    """First showing: the controls the URL names (``encoders=``, ``depth=``, ``pooling=``), if valid here."""
    state = urlstate.parse_query(dict(request.query_params) if request is not None else {})
    have = {k for _, k in v.encoder_choices()}
    chosen = [k for k in (state.encoders or ()) if k in have]
    return (chosen or encoders, state.depth or depth, state.pooling or pooling)


def build(demo: gr.Blocks) -> None:
    """Create the Pretraining tab's components inside the caller's ``gr.Tab`` context.

    Args:
        demo: the enclosing app; its page load (the tab's first showing) fills the views.
    """
    choices = v.encoder_choices()
    gr.Markdown(v.INTRO, elem_classes=["vitviz-help"])
    verdict = gr.Markdown(elem_id="pre-verdict")
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            encoders = gr.CheckboxGroup(choices, value=default_encoders(choices), label="Encoders (dashed: random weights)",
                                        elem_id="pre-encoders")
            depth = gr.Radio(v.DEPTH_CHOICES, value="last", label="Layer probed (share of each encoder's depth)",
                             elem_id="pre-depth")
            pooling = gr.Radio(v.POOLING_CHOICES, value="cls", label="Pooling", elem_id="pre-pooling")
        with gr.Column(scale=3):
            probe_plot = gr.Plot(label="linear probe: test accuracy vs labels per class", elem_id="pre-probe")
            probe_text = gr.Markdown(elem_id="pre-probe-info")
    gr.Markdown(v.HELP_PROBES, elem_classes=["vitviz-help"])
    probe_table = gr.Markdown(elem_id="pre-probe-table")
    gr.Markdown("### Every protocol with all the labels")
    gr.Markdown(v.HELP_PROTOCOLS, elem_classes=["vitviz-help"])
    bars = gr.Plot(label="test accuracy with all labels, every protocol", elem_id="pre-protocols")
    gr.Markdown("### How the trained runs learned, and their recipes")
    epochs = gr.Plot(label="validation accuracy per epoch", elem_id="pre-epochs")
    recipes = gr.Markdown(elem_id="pre-recipes")
    gr.Markdown(v.SOURCES, elem_id="pre-sources", elem_classes=["vitviz-help"])

    probe_in, probe_out = [encoders, depth, pooling], [probe_plot, probe_table, probe_text]
    proto_out = [bars, epochs, recipes, verdict]
    quick: dict[str, Any] = dict(api_visibility="private", trigger_mode="always_last", show_progress="minimal")

    endpoint(linear_probe, probe_in, [probe_plot, probe_table, probe_text], api_name="linear_probe")
    demo.load(on_load, probe_in, probe_in, api_visibility="private").then(
        linear_probe, probe_in, probe_out, api_visibility="private").then(
        protocols, [pooling], proto_out, api_visibility="private")
    gr.on([encoders.input, depth.input], linear_probe, probe_in, probe_out, **quick)
    pooling.input(linear_probe, probe_in, probe_out, **quick).then(protocols, [pooling], proto_out, **quick)
    gr.on([encoders.change, depth.change, pooling.change], None, probe_in, None, js=read_js("url_pretraining"),
          queue=False, api_visibility="private")

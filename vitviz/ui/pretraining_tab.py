"""The Pretraining tab: linear probes on frozen features against the number of labels, and the
shipped fine-tuning and from-scratch runs beside them, with a verdict computed from their logs.

Wiring only: every figure, table and sentence comes from :mod:`vitviz.views.pretraining`.
No encoder runs here: the probes read features computed once and shipped
(``assets/labelled/features``), the trained runs their shipped logs.
"""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from ..views import pretraining as v
from ..views.pretraining import Probe, Protocols
from ..views.urlstate import from_request
from .binder import Binder
from .common import handler, help_text, in_page, memo_view
from .js import read as read_js
from ..models.costs import Cost, cost

TAB_ID, LABEL = "pretraining", "Pretraining"


#: Encoders shown when the tab opens (those on disk among them).
DEFAULT_ENCODERS = ("dinov2-small", "dinov2-small-random", "mae-tiny", "mae-tiny-random", "beit-tiny")


def default_encoders(choices: list[tuple[str, str]]) -> list[str]:
    """The default encoders that have features here (else every one there is)."""
    have = [k for _, k in choices]
    return [k for k in DEFAULT_ENCODERS if k in have] or have


@dataclass(frozen=True)
class Controls:
    encoders: list[str]
    depth: str
    pooling: str


@memo_view(32)
def _probe(encoders: list[str], depth: str, pooling: str) -> Probe:
    return v.probe_view(encoders, depth, pooling)


# Cost: a curve reads cached features and solves 21 small least-squares problems per encoder (closed
# form, at most 172 photos); no encoder runs, so it is a view, not a heavy probe.
@handler(Cost.VIEW)
def linear_probe(encoders: list[str], depth: str, pooling: str,
                 progress: gr.Progress = gr.Progress()) -> Probe:
    """Endpoint ``linear_probe``: (encoder keys, depth share, pooling) -> (curves figure, table, caption).

    ``encoders``: feature keys such as ``dinov2-small`` or ``mae-tiny-random``; ``depth``: ``last``,
    ``3/4``, ``1/2``, ``1/4`` or ``0`` (the embedding); ``pooling``: ``cls`` or ``avg``.
    """
    progress(0, desc="fitting the probes")
    return _probe(list(v.check_encoders(encoders)), v.check_depth(depth), v.check_pooling(pooling))


@memo_view(2)
def _protocols(pooling: str) -> Protocols:
    return v.protocols_view(pooling)


@handler(Cost.VIEW)
def protocols(pooling: str) -> Protocols:
    """Every protocol with all labels, the training curves, their recipes and the verdict (private)."""
    return _protocols(v.check_pooling(pooling))


@cost(Cost.VIEW)
def on_load(encoders: list[str], depth: str, pooling: str, request: gr.Request) -> Controls:
    """First showing: the controls the URL names (``encoders=``, ``depth=``, ``pooling=``), if valid here."""
    state = from_request(request)
    have = {k for _, k in v.encoder_choices()}
    chosen = [k for k in (state.encoders or ()) if k in have]
    return Controls(chosen or encoders, state.depth or depth, state.pooling or pooling)


def build(demo: gr.Blocks) -> Binder:
    """Create the Pretraining tab's components inside the caller's ``gr.Tab`` context."""
    ui = Binder()
    choices = v.encoder_choices()
    help_text(v.INTRO)
    ui.verdict = gr.Markdown(elem_id="pre-verdict")
    with gr.Row():
        with gr.Column(scale=1, min_width=280):
            ui.encoders = gr.CheckboxGroup(choices, value=default_encoders(choices), label="Encoders (dashed: random weights)",
                                        elem_id="pre-encoders")
            ui.depth = gr.Radio(v.DEPTH_CHOICES, value="last", label="Layer probed (share of each encoder's depth)",
                             elem_id="pre-depth")
            ui.pooling = gr.Radio(v.POOLING_CHOICES, value="cls", label="Pooling", elem_id="pre-pooling")
        with gr.Column(scale=3):
            ui.probe_plot = gr.Plot(label="linear probe: test accuracy vs labels per class", elem_id="pre-probe")
            ui.probe_text = gr.Markdown(elem_id="pre-probe-info")
    help_text(v.HELP_PROBES)
    ui.probe_table = gr.Markdown(elem_id="pre-probe-table")
    gr.Markdown("### Every protocol with all the labels")
    help_text(v.HELP_PROTOCOLS)
    ui.bars = gr.Plot(label="test accuracy with all labels, every protocol", elem_id="pre-protocols")
    gr.Markdown("### How the trained runs learned, and their recipes")
    ui.epochs = gr.Plot(label="validation accuracy per epoch", elem_id="pre-epochs")
    ui.recipes = gr.Markdown(elem_id="pre-recipes")
    help_text(v.SOURCES, elem_id="pre-sources")

    probe, proto = ui.bind(linear_probe), ui.bind(protocols)
    ui.endpoint(linear_probe, api_name="linear_probe")
    demo.load(**ui.bind(on_load, quick=False)).then(**ui.bind(linear_probe, quick=False)).then(
        **ui.bind(protocols, quick=False))
    gr.on([ui.encoders.input, ui.depth.input], **probe)
    ui.pooling.input(**probe).then(**proto)
    controls = [ui.encoders, ui.depth, ui.pooling]
    in_page([c.change for c in controls], controls, read_js("url_pretraining"))
    return ui

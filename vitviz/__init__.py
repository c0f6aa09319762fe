"""vitviz: see how Vision Transformers and Masked Autoencoders work.

Public API::

    import vitviz
    vitviz.available_models()                       # list[ModelInfo]
    m = vitviz.load_model("mae-tiny")               # LoadedModel
    mine = vitviz.load_model("checkpoint-399.pth")  # your own MAE / ViT / DeiT / DINO file or HF folder
    img = vitviz.load_image("cat.jpg")              # RGB PIL image
    r = vitviz.reconstruct(m, img, mask_ratio=0.75, seed=0, pattern="random")
    a = vitviz.attention(m, img)                    # per-layer (heads, T, T) + token layout
    a.rollout(head_fusion="mean", discard_ratio=0.0)  # (gh, gw), sums to 1
    h = vitviz.head_atlas(m, img)                   # every head: h.distance, h.entropy (L, H); h.type_names()
    s = vitviz.query_key_space(m, img, layer=3, head=1)  # one head's q, k (T, d) and their joint 2-D PCA
    d = vitviz.decoder_provenance(m, img, mask_ratio=0.75, seed=0, patch=(3, 5))  # MAE decoder, hidden patch
    d.layer_maps(), d.rollout_map(), d.rollout_shares()  # where it copied from: (Ld, gh, gw), (gh, gw)
    c = vitviz.load_model("vit-base", random_init=True)  # a classifier (random weights offline)
    e = vitviz.explain_maps(c, img, target=None)    # e.maps["grad_rollout"] (gh, gw); e.target, e.probability
    q = vitviz.faithfulness(c, img, removal="drop", steps=8, explanation=e)  # q.deletion[m], q.auc()
    t = vitviz.tokenize(vitviz.load_model("vq-tiny"), img)   # BEiT visual tokens: t.ids (gh, gw), t.decoded
    p = vitviz.beit_predict(vitviz.load_model("beit-tiny"), img, mask_ratio=0.4, seed=0, pattern="block")
    f = vitviz.layer_tokens(m, img)                 # every layer's tokens: f.tokens[l] (T, D), f.layouts[l]
    f.patch_grid(-1)                                # (gh, gw, D) patch tokens of the last block
    lp = vitviz.linear_probe("mae-tiny", layer=-1, pooling="cls")  # lp.accuracy (len(k), seeds); lp.mean()
    dx = vitviz.diagnose("checkpoint-399.pth")      # is this MAE healthy? dx.findings, dx.to_text(), dx.to_json()
    ab = vitviz.ablate(c, img, heads=[(11, 3)], tokens=["cls"], mode="zero")  # ab.before / ab.after, ab.top(5)
    ll = vitviz.logit_lens(c, img)                  # ll.prob_by_layer(), ll.top(layer, 3), ll.first_lead()

The package is laid out by concept (``docs/architecture.md``): ``core`` (arrays),
``models``, ``mae``, ``explain``, ``embedding``, ``compute``, ``render``, ``plots``,
``views`` and ``ui``. No public name here shadows a submodule: ``vitviz.attention`` and
``vitviz.reconstruct`` are functions; their modules are ``vitviz.explain.attention`` and
``vitviz.mae.reconstruct``.

Importing the package loads no model, reads no setting and touches no network.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; nothing is imported at run time
    from .beit.api import beit_predict, tokenize
    from .beit.predict import BEiTPrediction
    from .beit.tokenize import Tokens
    from .core.images import load_image
    from .core.masking import PATTERNS, make_mask
    from .doctor.diagnose import diagnose
    from .doctor.report import Diagnosis
    from .errors import ImageError, ModelUnavailable
    from .explain.attention import attention
    from .explain.faithfulness import Curves, faithfulness
    from .explain.heads import HeadAtlas, head_atlas
    from .explain.layout import TokenLayout
    from .explain.maps import AttentionMaps
    from .explain.methods import Explanation, explain_maps
    from .explain.qk import QueryKeySpace, query_key_space
    from .features.layer_tokens import LayerTokens, layer_tokens
    from .intervene.ablation import Ablation, HeadRanking, ablate, rank_heads
    from .intervene.lens import ClassLens, PixelLens, logit_lens
    from .mae.provenance import DecoderProvenance, decoder_provenance
    from .mae.reconstruct import Reconstruction, reconstruct
    from .models.loading import LoadedModel, ModelInfo, available_models
    from .models.loading import open_model as load_model
    from .probing.api import linear_probe
    from .probing.linear import ProbeCurve

#: Public name -> the module that defines it (``module:name`` where it is defined under another name), imported on first use (PEP 562), so that
#: ``import vitviz`` costs milliseconds and loads neither torch nor timm; a command or a
#: script pays only for what it touches.
_EXPORTS: dict[str, str] = {
    "beit_predict": ".beit.api",
    "tokenize": ".beit.api",
    "BEiTPrediction": ".beit.predict",
    "Tokens": ".beit.tokenize",
    "load_image": ".core.images",
    "PATTERNS": ".core.masking",
    "make_mask": ".core.masking",
    "diagnose": ".doctor.diagnose",
    "Diagnosis": ".doctor.report",
    "ImageError": ".errors",
    "ModelUnavailable": ".errors",
    "attention": ".explain.attention",
    "Curves": ".explain.faithfulness",
    "faithfulness": ".explain.faithfulness",
    "HeadAtlas": ".explain.heads",
    "head_atlas": ".explain.heads",
    "TokenLayout": ".explain.layout",
    "AttentionMaps": ".explain.maps",
    "Explanation": ".explain.methods",
    "explain_maps": ".explain.methods",
    "QueryKeySpace": ".explain.qk",
    "query_key_space": ".explain.qk",
    "LayerTokens": ".features.layer_tokens",
    "layer_tokens": ".features.layer_tokens",
    "Ablation": ".intervene.ablation",
    "HeadRanking": ".intervene.ablation",
    "ablate": ".intervene.ablation",
    "rank_heads": ".intervene.ablation",
    "ClassLens": ".intervene.lens",
    "PixelLens": ".intervene.lens",
    "logit_lens": ".intervene.lens",
    "DecoderProvenance": ".mae.provenance",
    "decoder_provenance": ".mae.provenance",
    "Reconstruction": ".mae.reconstruct",
    "reconstruct": ".mae.reconstruct",
    "LoadedModel": ".models.loading",
    "ModelInfo": ".models.loading",
    "available_models": ".models.loading",
    "load_model": ".models.loading:open_model",  # a registry name or a checkpoint path
    "linear_probe": ".probing.api",
    "ProbeCurve": ".probing.linear",
}

__all__ = [
    "Diagnosis",
    "diagnose",
    "ProbeCurve",
    "linear_probe",
    "BEiTPrediction",
    "Tokens",
    "beit_predict",
    "tokenize",
    "LayerTokens",
    "layer_tokens",
    "Ablation",
    "HeadRanking",
    "ablate",
    "rank_heads",
    "ClassLens",
    "PixelLens",
    "logit_lens",
    "DecoderProvenance",
    "decoder_provenance",
    "AttentionMaps",
    "TokenLayout",
    "attention",
    "Curves",
    "Explanation",
    "explain_maps",
    "faithfulness",
    "HeadAtlas",
    "head_atlas",
    "QueryKeySpace",
    "query_key_space",
    "ImageError",
    "LoadedModel",
    "ModelInfo",
    "ModelUnavailable",
    "PATTERNS",
    "Reconstruction",
    "available_models",
    "load_image",
    "load_model",
    "make_mask",
    "reconstruct",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access (``vitviz.load_model`` and the rest)."""
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'vitviz' has no attribute {name!r}")
    module, _, attr = where.partition(":")  # "module" or "module:name defined there"
    value = getattr(importlib.import_module(module, __name__), attr or name)
    globals()[name] = value  # later accesses skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

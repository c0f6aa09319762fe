"""Frozen features of the labelled photo set, per encoder, computed once and kept on disk.

A :class:`FeatureSet` holds, for every photo of ``assets/labelled/manifest.json`` and
for some layers of one encoder, two vectors: the class token (``cls``) and the average
of the patch tokens (``avg``), both taken from the residual stream leaving the layer
(before any final norm; the probe standardises every channel on the train photos,
as MAE's linear probe does with a BatchNorm without affine parameters, He et al. 2021 §A.1, table 10).

Files are ``.npz`` with the vectors quantised to int8 per channel (affine, 256 levels;
the shipped files for the embedded encoders are under ``assets/labelled/features/``,
others go to the folder of ``VITVIZ_FEATURES_DIR``). A probe only ever reads these
files: the encoder is run by :func:`extract`, once, from the built photo folder
(``python -m vitviz.training.labelled``).

Shapes: ``N`` photos, ``K`` stored layers, ``D`` channels.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..assets import assets_dir
from ..cache import LRU
from ..models.loading import LoadedModel

POOLINGS: tuple[str, ...] = ("cls", "avg")
SPLITS: tuple[str, ...] = ("train", "val", "test")
FORMAT = "vitviz-features-1"


def labelled_dir() -> Path:
    """``assets/labelled``: the manifest, shipped features and shipped training logs."""
    return assets_dir() / "labelled"


def load_manifest(path: Path | None = None) -> dict:
    """The labelled set's manifest (``classes``, ``photos``: id, label, split, package, ...)."""
    return json.loads((path or labelled_dir() / "manifest.json").read_text())


def manifest_digest(manifest: dict) -> str:
    """sha256 of the ``(id, label, split)`` rows: a feature file must match its manifest."""
    rows = [(p["id"], p["label"], p["split"]) for p in manifest["photos"]]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def feature_key(model: str, random_init: bool = False) -> str:
    """File stem of an encoder's features: ``mae-tiny`` or ``mae-tiny-random``."""
    return f"{model}-random" if random_init else model


@dataclass(frozen=True, eq=False)
class FeatureSet:
    """One encoder's pooled features of every labelled photo.

    Attributes:
        model: registry name. random_init: True for the random-weight version.
        layers: ``(K,)`` layer indices stored (0 = embedding, ``i`` = output of block ``i``).
        depth: the encoder's number of blocks.
        features: ``(K, 2, N, D)`` float32, pooling axis in :data:`POOLINGS` order.
        labels: ``(N,)`` int64 class indices. split: ``(N,)`` str, one of :data:`SPLITS`.
        ids: ``(N,)`` photo ids. classes: class names. digest: :func:`manifest_digest` of its manifest.
    """

    model: str
    random_init: bool
    layers: tuple[int, ...]
    depth: int
    features: np.ndarray
    labels: np.ndarray
    split: np.ndarray
    ids: tuple[str, ...]
    classes: tuple[str, ...]
    digest: str

    @property
    def key(self) -> str:
        """:func:`feature_key` of this set."""
        return feature_key(self.model, self.random_init)

    def check_layer(self, layer: int) -> int:
        """Position of ``layer`` in :attr:`layers` (``-1`` = the last block).

        Raises:
            ValueError: a layer not stored, naming the stored ones.
        """
        want = self.depth if int(layer) == -1 else int(layer)
        if want not in self.layers:
            raise ValueError(f"{self.key} has features of layers {list(self.layers)} (0 = embedding, "
                             f"{self.depth} = last block), not {layer}")
        return self.layers.index(want)

    def vectors(self, layer: int, pooling: str) -> np.ndarray:
        """``(N, D)`` float32 features of one layer and pooling."""
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        return self.features[self.check_layer(layer), POOLINGS.index(pooling)]


def quantise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-channel affine int8: ``x ~ q * scale + offset``; ``x`` ``(..., N, D)``.

    Returns:
        ``(q int8 (..., N, D), scale (..., 1, D), offset (..., 1, D))`` float32.
    """
    lo = x.min(axis=-2, keepdims=True)
    hi = x.max(axis=-2, keepdims=True)
    scale = np.maximum(hi - lo, 1e-12) / 255.0
    q = np.clip(np.round((x - lo) / scale) - 128, -128, 127).astype(np.int8)
    return q, scale.astype(np.float32), (lo + 128 * scale).astype(np.float32)


def save(fs: FeatureSet, path: Path) -> None:
    """Write a feature set as compressed ``.npz`` (int8 vectors)."""
    q, scale, offset = quantise(fs.features)
    meta = {"format": FORMAT, "model": fs.model, "random_init": fs.random_init, "layers": list(fs.layers),
            "depth": fs.depth, "classes": list(fs.classes), "digest": fs.digest}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    np.savez_compressed(tmp, q=q, scale=scale, offset=offset, labels=fs.labels.astype(np.int16),
                        split=np.array([SPLITS.index(s) for s in fs.split], np.int8),
                        ids=np.array(fs.ids), meta=np.array(json.dumps(meta)))
    tmp.replace(path)


def load(path: Path) -> FeatureSet:
    """Read a file written by :func:`save` (no pickles)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"{path} is not a {FORMAT} file")
        feats = z["q"].astype(np.float32) * z["scale"] + z["offset"]
        return FeatureSet(meta["model"], bool(meta["random_init"]), tuple(meta["layers"]), int(meta["depth"]),
                          feats, z["labels"].astype(np.int64), np.array([SPLITS[i] for i in z["split"]]),
                          tuple(str(s) for s in z["ids"]), tuple(meta["classes"]), meta["digest"])


def _blocks_and_run(model: LoadedModel, x: torch.Tensor) -> tuple[list[torch.nn.Module], Any, int]:
    """The blocks, the forward pass and the number of prefix tokens of a registry encoder."""
    from ..explain.layout import vit_layout
    from ..models.beit import BEiTForMIM
    from ..models.mae import MaskedAutoencoderViT

    m: Any = model.module
    if isinstance(m, MaskedAutoencoderViT):
        ids = torch.arange(m.config.num_patches, device=x.device)
        return list(m.blocks), lambda: m.encode_tokens(m.embed_patches(x), ids), 1
    if isinstance(m, BEiTForMIM):
        mask = torch.zeros(x.shape[0], m.config.num_patches, dtype=torch.bool, device=x.device)
        return list(m.blocks), lambda: m.features(x, mask), 1
    if hasattr(m, "blocks") and hasattr(m, "forward_features"):
        return list(m.blocks), lambda: m.forward_features(x), vit_layout(m).num_prefix
    raise ValueError(f"{model.name} ({type(m).__name__}) is not an MAE, BEiT or ViT encoder")


def extract(model: LoadedModel, photos: Path, manifest: dict | None = None, layers: tuple[int, ...] | None = None,
            batch: int = 16, progress: Any = None) -> FeatureSet:
    """Run an encoder over the built photo folder and pool every stored layer.

    Args:
        model: a registry model (:func:`vitviz.load_model`), ViT-like.
        photos: the folder written by ``python -m vitviz.training.labelled`` (``images/<id>.png``).
        manifest: default: the shipped one.
        layers: default: every layer (embedding and each block).
        progress: optional ``callable(done, total)``.
    """
    from PIL import Image

    from ..core.images import normalize
    from ..explain.capture import capture_block_tokens

    manifest = manifest or load_manifest()
    rows = manifest["photos"]
    classes = tuple(manifest["classes"])
    size = model.input_size
    pooled: list[np.ndarray] = []
    depth = None
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        imgs = []
        for r in chunk:
            with Image.open(photos / "images" / f"{r['id']}.png") as im:
                imgs.append(np.asarray(im.convert("RGB").resize((size, size), Image.BICUBIC)))
        x = torch.from_numpy(np.stack(imgs)).permute(0, 3, 1, 2).float().div(255.0)
        x = normalize(x, model.data_config).to(model.device)
        blocks, run, n_prefix = _blocks_and_run(model, x)
        depth = len(blocks)
        seq, _ = capture_block_tokens(blocks, run)
        want = layers if layers is not None else tuple(range(depth + 1))
        cls = torch.stack([seq[i][:, 0] for i in want])                  # (K, B, D)
        avg = torch.stack([seq[i][:, n_prefix:].mean(dim=1) for i in want])
        pooled.append(torch.stack([cls, avg], dim=1).numpy())           # (K, 2, B, D)
        if progress is not None:
            progress(min(start + batch, len(rows)), len(rows))
    assert depth is not None
    feats = np.concatenate(pooled, axis=2).astype(np.float32)
    want = layers if layers is not None else tuple(range(depth + 1))
    return FeatureSet(model.name, bool(model.random_init), tuple(int(i) for i in want), depth, feats,
                      np.array([classes.index(r["label"]) for r in rows], np.int64),
                      np.array([r["split"] for r in rows]), tuple(r["id"] for r in rows), classes,
                      manifest_digest(manifest))


def feature_dirs() -> list[Path]:
    """Folders searched for feature files: ``VITVIZ_FEATURES_DIR`` (if set), then the shipped ones."""
    from .. import settings

    extra = settings.get("VITVIZ_FEATURES_DIR")
    return ([extra] if extra else []) + [labelled_dir() / "features"]


def find_features(model: str, random_init: bool = False) -> FeatureSet | None:
    """The feature set of an encoder from the first folder holding it, or None."""
    for folder in feature_dirs():
        path = folder / f"{feature_key(model, random_init)}.npz"
        if path.exists():
            return _load_cached(str(path), path.stat().st_mtime_ns)
    return None


def available_features() -> list[str]:
    """Keys (:func:`feature_key`) of every feature set on disk, sorted, each once."""
    keys = {p.stem for folder in feature_dirs() if folder.is_dir() for p in folder.glob("*.npz")}
    return sorted(k for k in keys if not k.endswith(".tmp"))


#: Feature files read, keyed by path and modification time.
_FILES: LRU[tuple, FeatureSet] = LRU(16, name="probing.features")


def _load_cached(path: str, mtime_ns: int) -> FeatureSet:
    return _FILES.get_or_compute((path, mtime_ns), lambda: load(Path(path)))


def build_features(name: str, photos: Path, out: Path, random_init: bool = False,
                   progress: Any = None) -> Path:
    """Load a registry encoder, :func:`extract` its features and :func:`save` them to ``out/<key>.npz``."""
    from ..models.loading import load_model

    model = load_model(name, random_init=random_init)
    path = out / f"{feature_key(name, random_init)}.npz"
    save(extract(model, photos, progress=progress), path)
    return path

"""The example photos' tokens, shipped, so that a view beside the examples encodes only the new photo.

The Features tab's joint PCA shows a visitor's photo beside three example photos, and its patch
correspondence compares it with one: on a new photo, four or two forward passes where one is
new. For ``dinov2-small`` the package ships what those views need of the examples at the layer
the tab opens on (the last block): every example photo's patch tokens, ``(gh, gw, D)`` float16,
in ``assets/models/dinov2-small.example-tokens.safetensors`` (``python -m vitviz.features.shipped``
writes it; about 0.8 MB).

They are used only when they are what the model would compute now. The file's metadata names the
model, the layer, the input size, the sha256 of the model's weights as loaded
(:func:`vitviz.models.checkpoint.weights_digest`: every tensor of its state dict, computed when the
model loads, so another size, another source's weights or int8 kernels give another digest) and, per
example, the content key of the photo's square view (:func:`vitviz.core.images.pixels_digest`, the
key of every cache). Any difference, or a missing or unreadable file, and :func:`example_grid`
computes the tokens (:func:`vitviz.features.layer_tokens.layer_tokens`). float16 keeps the tokens to half
a unit in the last place (2^-11 relative; they reach about 27): ``tests/features/test_shipped.py``
checks the file against a fresh computation.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..assets import example_images, model_file
from ..core.images import ImageInput, pixels_digest, square_view
from ..models.checkpoint import weights_digest
from ..models.loading import LoadedModel
from ..models.runner import on_module
from .layer_tokens import layer_tokens

#: The models whose example tokens ship.
SHIPPED = ("dinov2-small",)


def shipped_file(model_name: str) -> Path:
    """Where ``model_name``'s example tokens ship (``assets/models/NAME.example-tokens.safetensors``)."""
    return model_file(f"{model_name}.example-tokens.safetensors")


def _metadata(path: Path) -> dict[str, str] | None:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            return dict(f.metadata() or {})
    except Exception:  # noqa: BLE001 - a missing or broken file only means "compute them"
        return None


#: Path -> (file stamp, metadata) of shipped files read so far.
_META: dict[str, tuple[tuple[int, int], dict[str, str] | None]] = {}


def _cached_metadata(path: Path) -> dict[str, str] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    stamp = (st.st_mtime_ns, st.st_size)
    known = _META.get(str(path))
    if known is None or known[0] != stamp:
        known = _META[str(path)] = (stamp, _metadata(path))
    return known[1]


def shipped_grid(model: LoadedModel, view: np.ndarray, layer: int, path: Path | None = None) -> np.ndarray | None:
    """The shipped ``(gh, gw, D)`` float32 patch tokens of a photo's square view at ``layer``, or None.

    Args:
        view: ``(S, S, 3)`` uint8, the photo as the model sees it (:func:`vitviz.core.images.square_view`).
        path: the file (default :func:`shipped_file`).

    Returns:
        None unless the file names this model, this layer, this input size and this model's weights
        digest, and holds a photo with this view; always None for random weights and int8 kernels.
    """
    if model.random_init or model.kernels == "int8" or (model.name not in SHIPPED and path is None):
        return None
    path = shipped_file(model.name) if path is None else path
    meta = _cached_metadata(path)
    if not meta or meta.get("model") != model.name or meta.get("layer") != str(int(layer)):
        return None
    if meta.get("input_size") != str(model.input_size) or tuple(view.shape[:2]) != (model.input_size,) * 2:
        return None
    want = pixels_digest(view)
    names = [name for name, digest in json.loads(meta.get("views", "{}")).items() if digest == want]
    if not names or meta.get("weights") != on_module(model, weights_digest):
        return None
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as f:
        return f.get_tensor(names[0]).astype(np.float32)


def example_grid(model: LoadedModel, image: ImageInput, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """A photo's square view ``(S, S, 3)`` uint8 and its ``(gh, gw, D)`` float32 patch tokens at ``layer``:
    shipped when it is an example photo whose shipped tokens match (:func:`shipped_grid`), else computed
    (:func:`~vitviz.features.layer_tokens.layer_tokens`, cached)."""
    view = np.asarray(square_view(image, model.input_size), dtype=np.uint8)
    grid = shipped_grid(model, view, layer)
    if grid is not None:
        return view, grid
    lt = layer_tokens(model, view)
    return lt.image, lt.patch_grid(layer)


def write(model: LoadedModel, path: Path | None = None) -> Path:
    """Compute and write ``model``'s shipped file: every example photo's last-block patch tokens, float16."""
    from safetensors.numpy import save_file

    path = shipped_file(model.name) if path is None else path
    tensors, views = {}, {}
    layer = -1
    for photo in example_images():
        lt = layer_tokens(model, photo)
        layer = lt.num_layers - 1
        name = Path(photo).stem
        tensors[name] = np.ascontiguousarray(lt.patch_grid(layer).astype(np.float16))
        views[name] = pixels_digest(lt.image)
    meta = {"model": model.name, "layer": str(layer), "input_size": str(model.input_size),
            "weights": on_module(model, weights_digest), "views": json.dumps(views, sort_keys=True),
            "written_by": "python -m vitviz.features.shipped"}
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata=meta)
    _META.pop(str(path), None)
    return path


def main() -> None:
    """``python -m vitviz.features.shipped``: rewrite the shipped example tokens of every model in :data:`SHIPPED`."""
    from ..models.loading import load_model

    for name in SHIPPED:
        out = write(load_model(name, device="cpu"))
        print(f"{name}: {out} ({out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()

"""Hugging Face ZeroGPU: model calls inside ``@spaces.GPU`` when the ``spaces`` package is importable.

On ZeroGPU, CUDA exists only inside functions decorated with ``spaces.GPU``: the decorated function
runs in a worker that holds a GPU for the call, receives its arguments and returns its result
pickled. vitviz marks each library function that runs a model's forward or backward pass
(:func:`vitviz.models.runner.runs_model`); :func:`install` makes every such call run as
``spaces.GPU(runner.execute)``. Loading, drawing, figures and PCA stay in the main process; the
marked functions return NumPy arrays or CPU tensors. Nothing here uses ``torch.compile`` (ZeroGPU
does not support it), and the example photos compute nothing at start-up (``gr.Examples`` without a
function: a visitor's click fills the image box and the tab computes then).

``spaces`` is not a requirement: elsewhere it is not installed and :func:`install` does nothing (the
``spaces`` package's own decorator is also a no-op outside ZeroGPU).
"""

from __future__ import annotations

from ...models import runner

#: The most seconds of GPU one model call asks for (``spaces.GPU``'s own default).
GPU_SECONDS = 60


def install() -> bool:
    """Run vitviz's model calls inside ``spaces.GPU`` if the ``spaces`` package imports; True if it did."""
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return False
    runner.install(spaces.GPU(duration=GPU_SECONDS))
    return True

"""Where the bundled files are: the embedded weights and the example photos.

In an installed package they are package data (``vitviz/_assets``, mapped from the
checkout's top-level ``assets/`` folder by ``pyproject.toml``) and found with
:mod:`importlib.resources`; in a checkout they are the ``assets/`` folder itself.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path


@functools.lru_cache(maxsize=1)
def assets_dir() -> Path:
    """The folder holding ``models/`` and ``examples/``."""
    packaged = resources.files("vitviz") / "_assets"
    if packaged.is_dir() and (packaged / "models").is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[1] / "assets"


def model_file(name: str) -> Path:
    """An embedded weights file (``assets/models/NAME``)."""
    return assets_dir() / "models" / name


def example_images() -> list[str]:
    """Paths of the bundled example photos, sorted (JPEG first, then PNG)."""
    folder = assets_dir() / "examples"
    return sorted(str(p) for p in folder.glob("*.jpg")) + sorted(str(p) for p in folder.glob("*.png"))


def default_example() -> str | None:
    """The example photo every tab of the app starts with (the second, else the first; None without examples)."""
    examples = example_images()
    return examples[1] if len(examples) > 1 else (examples[0] if examples else None)


def image_or_example(text: str) -> Path:
    """A file path, or the bundled example photo of that name (``chelsea``, ``coffee.jpg``): the CLI's IMAGE,
    so the README's command lines work from any directory. A name that is neither stays a path (the command
    then says that no file is there)."""
    path = Path(text)
    if path.exists() or "/" in text or "\\" in text:
        return path
    for example in example_images():
        if text in (Path(example).stem, Path(example).name):
            return Path(example)
    return path

"""Typed errors raised by the vitviz library.

The UI maps these to readable messages; the CLI prints them to stderr.
"""

from __future__ import annotations


class ImageError(ValueError):
    """The input could not be read as an image, or breaks a safety limit."""


class ModelUnavailable(RuntimeError):
    """A registered model cannot be loaded here (weights missing, offline, ...)."""

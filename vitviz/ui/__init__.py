"""Gradio front end: the only part of vitviz that imports gradio."""

from .app import build_demo, launch_options

__all__ = ["build_demo", "launch_options"]

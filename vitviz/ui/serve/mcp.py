"""The app's named endpoints as MCP tools (``python app.py --mcp``, Gradio's ``mcp_server=True``).

Gradio's MCP server lists every *public* named endpoint as a tool, described by its handler's
docstring (the summary, ``Args:`` and ``Returns:``), and names the tool after the handler
function (``gradio/mcp.py``, ``get_tool_to_endpoint``, Gradio 6.31). vitviz's handlers are
called ``run_reconstruct``, ``tokenize_endpoint``, ...; :func:`name_tools` gives each public
endpoint's handler its endpoint's name, so an assistant calls the same ``reconstruct``,
``rollout`` or ``head_atlas`` that ``gradio_client`` does. UI-only handlers are private
(``api_visibility="private"``) and never become tools.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import gradio as gr


def public_endpoints(demo: gr.Blocks) -> dict[str, Any]:
    """``{api_name: handler}`` of every public named endpoint (what MCP and gradio_client see)."""
    return {fn.api_name: fn.fn for fn in demo.fns.values()
            if fn.fn is not None and isinstance(fn.api_name, str) and fn.api_visibility == "public"}


def name_tools(demo: gr.Blocks) -> None:
    """Name each public endpoint's handler after its endpoint (the MCP tool name), in place.

    The handler is wrapped (``functools.wraps``: same signature, docstring and behaviour) only
    when its name differs; generator and coroutine handlers keep their own object (the wrapper
    would hide what they are).
    """
    for fn in demo.fns.values():
        if fn.fn is None or not isinstance(fn.api_name, str) or fn.api_visibility != "public":
            continue
        handler = fn.fn
        if getattr(handler, "__name__", None) == fn.api_name or inspect.isgeneratorfunction(handler) or \
                inspect.iscoroutinefunction(handler) or inspect.isasyncgenfunction(handler):
            continue

        fn.fn = _renamed(handler, fn.api_name)


def _renamed(handler: Any, name: str) -> Any:
    @functools.wraps(handler)
    def named(*args: Any, **kwargs: Any) -> Any:
        return handler(*args, **kwargs)

    named.__name__ = named.__qualname__ = name
    return named

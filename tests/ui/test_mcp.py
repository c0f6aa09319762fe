"""``python app.py --mcp`` (issue 31): the named endpoints as MCP tools, listed and called by a real MCP
client over HTTP (the ``mcp`` package's streamable-HTTP client), on a local checkpoint given with --model."""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import re

import torch
from PIL import Image

import vitviz
from tools.appserver import running_app
from vitviz.core.images import synthetic_image

from ..models.local_fixtures import mae_state_dict

#: Endpoints an assistant must find, by their API names.
EXPECTED = {"reconstruct", "sweep", "rollout", "attention_query", "head_atlas", "qk_space", "feature_pca", "explain",
            "tokenize", "beit_predict", "patch_grid", "swin_attention", "attention_flops"}


async def _session(url: str, work):
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(timeout=600) as http, streamable_http_client(url, http_client=http) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def test_mcp_lists_the_named_endpoints_and_reconstructs_a_local_checkpoint(tmp_path):
    path = tmp_path / "checkpoint-7.pth"
    torch.save({"model": mae_state_dict(1, d=256, depth=6, patch=8, grid=8, dd=128, ddepth=2), "epoch": 7,
                "args": argparse.Namespace(model="mae_vit_mine", norm_pix_loss=False)}, path)
    picture = synthetic_image(96)
    buf = io.BytesIO()
    picture.save(buf, format="PNG")
    data_url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()

    async def work(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        result = await session.call_tool("reconstruct", {"image": data_url, "model_name": "mine", "mask_ratio": 0.5,
                                                         "seed": 3, "pattern": "random"})
        return tools, result

    with running_app(log=tmp_path / "app.log", args=("--mcp", "--model", f"mine={path}")) as (url, _):
        tools, result = asyncio.run(_session(url + "gradio_api/mcp/", work))
    assert EXPECTED <= set(tools), sorted(tools)
    assert not [n for n in tools if n.startswith(("update", "page_", "on_", "_"))], sorted(tools)  # UI-only: private
    schema = tools["reconstruct"].inputSchema["properties"]
    assert set(schema) == {"image", "model_name", "mask_ratio", "seed", "pattern"}
    assert "MAE model name" in schema["model_name"].get("description", "")
    assert "Masked Autoencoder" in tools["reconstruct"].description
    assert not result.isError, result.content
    text = " ".join(c.text for c in result.content if getattr(c, "text", None))
    want = vitviz.reconstruct(vitviz.load_model(path, device="cpu"), picture, mask_ratio=0.5, seed=3)
    mse = re.search(r"MSE[^0-9]*([0-9.]+)", text)
    assert mse is not None, text
    assert float(mse.group(1)) == round(want.masked_mse, len(mse.group(1).split(".")[1])), text


def test_a_public_endpoints_handler_is_named_after_its_endpoint():
    import gradio as gr

    from vitviz.ui.binder import Binder

    def run_double(x: float) -> float:
        """Double a number.

        Args:
            x: the number.
        """
        return 2 * x

    with gr.Blocks() as demo:
        ui = Binder()
        ui.x, ui.y = gr.Number(), gr.Number()
        gr.Button().click(**ui.bind(run_double, "y", inputs=["x"], api_name="double", api_visibility="public"))
        ui.endpoint(run_double, "twice", "y", inputs=["x"])
        gr.Button().click(**ui.bind(run_double, "y", inputs=["x"]))
    handlers = {fn.api_name: fn.fn for fn in demo.fns.values() if fn.api_visibility == "public"}
    assert {name: h.__name__ for name, h in handlers.items()} == {"double": "double", "twice": "twice"}
    assert handlers["double"](4) == 8 and handlers["double"].__doc__ == run_double.__doc__

"""mae-tiny in the visitor's browser: the ONNX graph, the mask tables and the static page.

The browser runs the same weights as the library, exported by ``tools/export_onnx.py`` to
``assets/models/mae-tiny.onnx`` and executed with ONNX Runtime Web (vendored by
``tools/vendor_ort_web.py`` into ``vitviz/web/vendor``). :mod:`vitviz.web.graph` knows the graph
and the masks the page needs; :mod:`vitviz.web.export` writes the self-contained static page
(``python -m vitviz export-web DIR``). Nothing here imports gradio or onnxruntime.
"""

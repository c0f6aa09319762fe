"""vitviz web app. ``python app.py`` serves it; Hugging Face Spaces imports ``demo``."""

import os

from vitviz.ui import build_demo

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
demo = build_demo()

if __name__ == "__main__":
    demo.launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860"))),
        max_file_size=os.environ.get("VITVIZ_MAX_UPLOAD", "20mb"),
        share=False,
    )

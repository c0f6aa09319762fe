"""vitviz web app. ``python app.py`` serves it; Hugging Face Spaces imports ``demo``."""

import os

from vitviz.ui import build_demo, launch_options

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
demo = build_demo()

if __name__ == "__main__":
    demo.launch(**launch_options())

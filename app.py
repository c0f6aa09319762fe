"""vitviz web app. ``python app.py`` serves it (``--help``: your own checkpoints, MCP tools); Hugging Face
Spaces imports ``demo``."""

import os

# OpenMP threads that wait for work sleep instead of spinning: on a shared CPU (a Space's 2 cores, several
# visitors) spinning threads steal the cores the computing ones need (bench/README.md, issue 21: the sweep
# at 2 threads took 1161 ms wall with spinning waits, 359 ms with passive ones). Read once, when torch's
# OpenMP runtime starts, so it is set before torch is imported; an explicit setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# numpy's OpenBLAS on one thread: its threads spin while waiting too, and on shared cores the probes' eigen-
# decompositions (Features tab) took 75-260 ms each instead of 6 ms; swin-tiny's probes went from minutes to
# seconds (bench/README.md, issue 34). The heavy work is torch's, which keeps its own threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from vitviz.ui import build_demo, launch_options, serve  # noqa: E402 - after the OpenMP setting above

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
if __name__ == "__main__":  # --model NAME=PATH (your checkpoints) and --mcp: python app.py --help
    from vitviz.ui.starter import start_options

    options = start_options()
if __name__ != "__mp_main__":
    # A model worker process (VITVIZ_WORKERS=processes, started with ``spawn``) imports this file under the name
    # __mp_main__ before it runs its calls: it needs none of the page, and building it there would cost every
    # worker Gradio and the tabs (~0.5 GB) and start a second set of workers inside each worker.
    demo = build_demo()
    serve.install(demo)  # a shared host (vitviz/ui/serve): the named contacts, model calls by cost class

if __name__ == "__main__":
    import signal

    from vitviz.ui import warmup

    def _stop(signum: int, frame: object) -> None:
        """SIGTERM (``docker stop``) ends the app as Ctrl+C does: Gradio closes the server and ``launch`` returns.
        In a container the app is PID 1, which ignores a SIGTERM it does not handle (stopped only by SIGKILL)."""
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)

    warmup.start(demo)  # once listening, at idle priority: the dinov2-small tabs' shared work (vitviz/ui/warmup.py)
    demo.launch(**launch_options(), **options)

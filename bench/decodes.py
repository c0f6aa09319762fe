"""Decodes per upload on the MAE tab: how many times one new photo is decoded by what the page runs for it.

``python bench/decodes.py [photo]`` copies the photo (default: the second example) to a new path, as an
upload would be, and runs the MAE tab's handlers for a new image in the page's order: the view
(``update_view``), the sweep beside it (``page_sweep``) and the slider's stops shipped to the page
(``scrub_payload``). It counts the calls of ``vitviz.core.decode.open_checked`` (one per decode of a file
or of bytes) during each, and the total.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    from vitviz.assets import example_images
    from vitviz.core import decode
    from vitviz.ui import mae_tab
    from vitviz.views.mae import NO_COMPARE

    source = Path(sys.argv[1] if len(sys.argv) > 1 else example_images()[1])
    folder = Path(tempfile.mkdtemp(prefix="vitviz-decodes-"))
    try:
        upload = folder / ("upload" + source.suffix)
        shutil.copyfile(source, upload)
        calls = {"n": 0}
        real = decode.open_checked

        def counting(data: bytes):  # noqa: ANN202 - same as decode.open_checked
            calls["n"] += 1
            return real(data)

        decode.open_checked = counting
        quiet = lambda *a, **k: None  # noqa: E731 - a gr.Progress stand-in
        steps = [
            ("update_view", lambda: mae_tab.update_view(mae_tab.Controls(str(upload), "mae-tiny", 0.75, 0, "random",
                                                                         False, None, NO_COMPARE))),
            ("page_sweep", lambda: mae_tab.page_sweep(str(upload), "mae-tiny", 0, "random", progress=quiet)),
            ("scrub_payload", lambda: mae_tab.scrub_payload(str(upload), "mae-tiny", 0, "random")),
        ]
        print(f"photo {source.name} ({source.stat().st_size / 1e6:.2f} MB); load {open('/proc/loadavg').read().split()[:3]}")
        print("| handler | decodes | s |")
        print("| --- | ---: | ---: |")
        total = 0
        for name, run in steps:
            before, t0 = calls["n"], time.perf_counter()
            run()
            total += calls["n"] - before
            print(f"| {name} | {calls['n'] - before} | {time.perf_counter() - t0:.2f} |")
        print(f"| **total for one upload** | **{total}** | |")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

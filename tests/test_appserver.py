"""tools/appserver.py: what the tests and benchmarks use to reach the app leaves nothing behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tools.appserver import client_temp_folder


def test_client_temp_folder_takes_gradio_clients_leftovers_with_it():
    before = tempfile.gettempdir()
    with client_temp_folder() as folder:
        assert tempfile.gettempdir() == str(folder) and folder.is_dir()
        leftover = Path(tempfile.gettempdir()) / ("0" * 40)  # what gradio_client's download leaves: an empty folder
        leftover.mkdir()
    assert not folder.exists() and not leftover.exists()
    assert tempfile.gettempdir() == before

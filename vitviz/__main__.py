"""``python -m vitviz``: see :mod:`vitviz.cli`."""

from .cli import main

raise SystemExit(main())

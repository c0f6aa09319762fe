"""What computation costs: closed-form FLOPs and parameters, tables of them, and
measurements of attention on this machine. Never imports :mod:`vitviz.explain`."""

"""Plotly figures, one module per subject, sharing one style (:mod:`._style`).

Each builder takes rows or arrays from the concept modules and returns a
``plotly.graph_objects.Figure`` with axis titles that carry units and hover text with
the values. Plots import only :mod:`vitviz.core` and result types.
"""

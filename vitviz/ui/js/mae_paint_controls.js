// Paint mode or the painted mask changed: slider, seed and pattern off while painting, the slider saying what is
// painted (vitviz.mae.controls; __LABEL__: vitviz.views.mae_paint.PAINTED_LABEL).
(paint, painted) => vitviz.mae.controls(__LABEL__, paint, painted)

// A change of the MAE slider, seed or pattern: decided in the page (vitviz.inpage.move). __KINDS__: the panel
// kinds; __NO_COMPARE__: "no comparison"; __SWEEP__: whether the server path also bumps the sweep's counter.
(...a) => vitviz.inpage.move(__KINDS__, __NO_COMPARE__, __SWEEP__, ...a)

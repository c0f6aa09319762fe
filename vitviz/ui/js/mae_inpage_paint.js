// A stroke on the MAE tab's Original panel (__TICK__ false) or "Paint the mask" ticked (__TICK__ true): decided in
// the page (vitviz.inpage.paint). __NO_COMPARE__: "no comparison".
(...a) => vitviz.inpage.paint(__TICK__, __NO_COMPARE__, ...a)

// The MAE model's or the comparison's change: the line that says where the panels are computed (vitviz.inpage).
// __NO_COMPARE__: "no comparison".
(model, compared) => { vitviz.inpage.show(model, compared, __NO_COMPARE__); }

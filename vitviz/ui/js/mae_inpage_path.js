// The MAE model's change: the line that says where the panels are computed (vitviz.inpage).
(model) => { vitviz.inpage.show(model); }

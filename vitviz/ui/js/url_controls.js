// A control of the MAE or BEiT tab changed: (model, ratio, seed, pattern) go into the URL.
(model, ratio, seed, pattern) => { vitviz.url.controls(model, ratio, seed, pattern); return [model, ratio, seed, pattern]; }

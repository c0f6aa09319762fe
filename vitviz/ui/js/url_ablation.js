// The Ablate tab's model or heads switched off changed: model= and heads= in the URL.
(model, heads) => { vitviz.url.ablation(model, heads); return [model, heads]; }

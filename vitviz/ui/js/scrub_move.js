// The MAE slider's change (vitviz.ui.scrub): the stop's panels from the page, or a bump of the request
// counter (the server's view). Outputs: (masked, reconstruction, pasted, error, metrics, request);
// undefined leaves an output as it is. __KINDS__: the panel kinds; __NO_COMPARE__: "no comparison".
(ratio, image, model, seed, pattern, paint, compare, payload, request) => {
  const S = vitviz.scrub, KINDS = __KINDS__;
  S.load(payload, KINDS);
  const hit = S.lookup(ratio, image, model, seed, pattern, paint, compare, KINDS, __NO_COMPARE__);
  if (hit) return [...hit, undefined];
  return [...KINDS.map(() => undefined), undefined, (Number(request) || 0) + 1];
}

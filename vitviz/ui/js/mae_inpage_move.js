// A change of the MAE slider, seed or pattern: the stop's panels the page already holds (vitviz.ui.scrub,
// the server's own PNGs), else the panels computed in the page (vitviz.inpage, mae-tiny), else a bump of
// the request counter (the server's view; a change of seed or pattern also bumps the sweep's counter).
// Outputs: (masked, reconstruction, pasted, error, metrics, request, sweep); undefined leaves one as it is.
// __KINDS__: the panel kinds; __NO_COMPARE__: "no comparison"; __SWEEP__: whether to bump the sweep.
async (ratio, image, model, seed, pattern, paint, compare, payload, request, sweep) => {
  const S = vitviz.scrub, KINDS = __KINDS__, none = KINDS.map(() => undefined);
  S.load(payload, KINDS);
  const hit = S.lookup(ratio, image, model, seed, pattern, paint, compare, KINDS, __NO_COMPARE__);
  if (hit) return [...hit, undefined, undefined];
  const own = await vitviz.inpage.panels(ratio, model, seed, pattern, paint, compare, __NO_COMPARE__);
  if (own === 'stale') return [...none, undefined, undefined, undefined];
  if (own) return [...own, undefined, undefined];
  return [...none, undefined, (Number(request) || 0) + 1, __SWEEP__ ? (Number(sweep) || 0) + 1 : undefined];
}

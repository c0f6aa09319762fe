// After a server view: if the page holds the slider's stop, show it (a late server answer never wins).
(ratio, image, model, seed, pattern, paint, compare, payload, request) => {
  const S = vitviz.scrub, KINDS = __KINDS__;
  S.load(payload, KINDS);
  const hit = S.lookup(ratio, image, model, seed, pattern, paint, compare, KINDS, __NO_COMPARE__);
  return hit ? [...hit, undefined] : [];
}

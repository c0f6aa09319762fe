// A control of the Pretraining tab changed: encoders=, depth= and pooling= go into the URL.
(encoders, depth, pooling) => {
  vitviz.url.set((p) => {
    if (encoders && encoders.length) p.set('encoders', encoders.join(','));
    if (depth) p.set('depth', depth);
    if (pooling) p.set('pooling', pooling);
  });
  return [encoders, depth, pooling];
}

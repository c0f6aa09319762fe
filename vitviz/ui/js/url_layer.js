// The attention layer changed: layer= in the URL.
(layer) => { vitviz.url.layer(layer); return [layer]; }

// The payload changed: download and cut its pack (or forget the old one when it is empty).
(payload) => { vitviz.scrub.load(payload, __KINDS__); return []; }

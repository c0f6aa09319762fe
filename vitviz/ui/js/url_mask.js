// The painted mask changed: mask= in the URL while painting (vitviz.ui.urlstate.encode_mask), gone otherwise.
(code) => { vitviz.url.mask(code); return [code]; }

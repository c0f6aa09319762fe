// Image, model, seed or pattern changed: the page's stops no longer apply (the payload is emptied).
() => { vitviz.scrub.forget(); return ['']; }

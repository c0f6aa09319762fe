// js_on_load of the Ablate tab's hidden goto component: a head clicked in the Heads atlas arrives here.
vitviz.ablate.gotoTarget(props);

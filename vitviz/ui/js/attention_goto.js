// js_on_load of the Attention tab's hidden goto component: a head clicked in the Heads tab arrives here.
vitviz.attention.gotoTarget(props);

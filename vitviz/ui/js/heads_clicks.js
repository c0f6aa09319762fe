// js_on_load of the Heads tab's hidden clicks component: clicks on its charts.
vitviz.heads.clicks(props);

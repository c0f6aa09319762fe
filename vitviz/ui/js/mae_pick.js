// js_on_load of the provenance box's hidden pick component: clicks on the reconstruction panels.
vitviz.mae.pick(props);

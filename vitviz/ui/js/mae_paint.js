// js_on_load of the MAE tab's hidden stroke component: the paint brush on the Original panel.
vitviz.mae.paint(props);

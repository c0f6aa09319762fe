// js_on_load of the MAE tab's live rate line (vitviz.ui.mae_live): frames per second and latency, shown there.
vitviz.live.rate();

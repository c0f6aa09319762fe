// js_on_load of the MAE tab's camera computed in the page (vitviz.ui.mae_live): built by vitviz.inpage.mount.
vitviz.inpage.mount(element.querySelector('#mae-inpage-live'));

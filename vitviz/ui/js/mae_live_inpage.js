// js_on_load of the MAE tab's camera computed in the page (vitviz.ui.mae_live, vitviz.inpage): its button.
element.querySelector('button').addEventListener('click', () => vitviz.inpage.camera(element));

// launch(js=...): run once the app has loaded (vitviz.ui.js.page).
() => { window.vitviz.start(); }

// A lazy tab's select (vitviz.ui.lazy): its opener goes to 1 on the first selection. __TAB__: the tab's id.
async (opened) => vitviz.lazy.open(__TAB__, opened)

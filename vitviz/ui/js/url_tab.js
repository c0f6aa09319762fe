// A tab was selected: tab= in the URL (once the URL's own tab is open). __TAB__: the tab's id.
() => { vitviz.url.tab(__TAB__); }

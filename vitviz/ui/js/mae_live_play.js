// Play (__PLAYING__ true) or Stop of the server's video (vitviz.ui.mae_live), remembered for mae_live_note.js;
// the event's inputs pass on unchanged.
(...a) => { vitviz.inpage.videoPlaying = __PLAYING__; return a.length === 1 ? a[0] : a; }

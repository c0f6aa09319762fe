// Play or Stop of the server's video (vitviz.ui.mae_live): remembered in the page (vitviz.ui.js mae_live_note
// bumps the control counter only while a video plays). __PLAYING__: true for Play, false for Stop; the event's
// inputs are passed on unchanged.
(...args) => { vitviz.live.videoPlaying = __PLAYING__; return args.length === 1 ? args[0] : args; }

// A control of the MAE tab changed: bump the hidden counter whose change hands the controls to a video the
// server is playing for this page (vitviz.ui.mae_live.note_controls), and only then: with no video playing,
// a slider, seed or pattern change makes no server call. Outputs: (counter); undefined leaves it as is.
(counter) => (vitviz.live.videoPlaying ? (Number(counter) || 0) + 1 : undefined)

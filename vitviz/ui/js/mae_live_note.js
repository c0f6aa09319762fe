// A control of the MAE tab changed: bump the counter whose change hands the controls to a video the server plays
// for this page (vitviz.ui.mae_live.note_controls), only while one plays: otherwise no server call.
(n) => (vitviz.inpage.videoPlaying ? (Number(n) || 0) + 1 : undefined)

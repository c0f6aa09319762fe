// A live frame's answer arrived: the page's send time of the frame the server computed (vitviz.ui.mae_live).
(sent) => { vitviz.live.answer(sent); return []; }

// A user's change to a tab's image box (vitviz.ui.shared_image): (image, relay) -> [relay].
// __TAB__: the tab's id; __CLEAR__: true for the box's clear event, "emptied" for its change (only an empty box counts).
(image, relay) => vitviz.image.publish(__TAB__, image, relay, __CLEAR__)

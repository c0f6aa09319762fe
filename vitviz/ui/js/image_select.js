// A tab sharing the image is selected: (image, relay, opened) -> [image, relay, opened]. __TAB__: its id.
async (image, relay, opened) => vitviz.image.select(__TAB__, image, relay, opened)

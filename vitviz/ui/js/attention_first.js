// js of the Attention tab's first view (its page-load chain, vitviz.ui.attention_tab.on_load): a head clicked in
// the Heads tab before this tab was shown is drawn at once (vitviz.attention.first). Arguments: the inputs
// (model, layer, part, query, head, image, mask_ratio, seed, row, col), then the outputs; returns the inputs.
(...args) => [...vitviz.attention.first(args.slice(0, 5)), ...args.slice(5, 10)]

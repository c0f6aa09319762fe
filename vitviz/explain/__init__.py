"""Explaining what a model attends to: one capture mechanism for every attention module,
the token layout, attention maps, rollout and distances, Swin's window attention, labels."""

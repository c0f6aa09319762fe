"""Models: the registry (data), checkpoints (reading, strict loading), weight sources,
the one random-weights builder, and :class:`~vitviz.models.loading.LoadedModel`."""

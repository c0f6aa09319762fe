"""Training and data gathering for the embedded models.

Nothing in the runtime library imports this package: it is run as scripts
(``python -m vitviz.training.data``, ``python -m vitviz.training.train_mae``,
``python -m vitviz.training.evaluate``) and may shell out to package managers.
"""

"""The cost classes live in the library (:mod:`vitviz.models.costs`); some tabs still import them from here."""

from ...models.costs import Cost, cost, model_cost

__all__ = ["Cost", "cost", "model_cost"]

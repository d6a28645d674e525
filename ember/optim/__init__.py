"""``ember.optim``: optimizers (each with a functional update) and learning-rate schedules."""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]

"""``ember.optim``: optimizers (each with a functional update) and learning-rate schedules."""

from . import lr_scheduler, swa_utils  # noqa: F401
from ._stateless import swap_in_optimizer_params_and_state
from .adafactor import Adafactor
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
           "Adagrad", "Adadelta", "ASGD", "Rprop", "LBFGS", "SparseAdam", "Adafactor",
           "Muon", "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]

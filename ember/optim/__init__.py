"""``ember.optim``: optimizers (each with a functional update) and learning-rate schedules."""

from . import lr_scheduler, swa_utils  # noqa: F401
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop",
           "Adagrad", "Adadelta", "ASGD", "Rprop", "LBFGS", "SparseAdam", "lr_scheduler",
           "swa_utils"]

"""Which functional optimizer stands for which optimizer
(``torch.distributed.optim.utils``)."""

from __future__ import annotations

from .functional_adadelta import _FunctionalAdadelta
from .functional_adagrad import _FunctionalAdagrad
from .functional_adam import _FunctionalAdam
from .functional_adamax import _FunctionalAdamax
from .functional_adamw import _FunctionalAdamW
from .functional_rmsprop import _FunctionalRMSprop
from .functional_rprop import _FunctionalRprop
from .functional_sgd import _FunctionalSGD

__all__ = ["as_functional_optim", "functional_optim_map", "register_functional_optim"]


def _optim_map():
    from ... import optim

    return {optim.Adagrad: _FunctionalAdagrad, optim.Adam: _FunctionalAdam,
            optim.AdamW: _FunctionalAdamW, optim.SGD: _FunctionalSGD,
            optim.Adadelta: _FunctionalAdadelta, optim.RMSprop: _FunctionalRMSprop,
            optim.Rprop: _FunctionalRprop, optim.Adamax: _FunctionalAdamax}


#: optimizer class -> its functional counterpart
functional_optim_map: dict = _optim_map()


def register_functional_optim(key, optim) -> None:
    """Make ``as_functional_optim(key, ...)`` build ``optim`` (first registration wins).

    Args:
        key: an optimizer class (or any key).
        optim (type): its functional counterpart.

    Example::

        >>> from ember.distributed.optim.utils import register_functional_optim
        >>> register_functional_optim(ember.optim.SGD, object)  # SGD is already there
    """
    if key not in functional_optim_map:
        functional_optim_map[key] = optim


def _create_functional_optim(functional_optim_cls, *args, **kwargs):
    return functional_optim_cls([], *args, **kwargs, _allow_empty_param_list=True)


def as_functional_optim(optim_cls, *args, **kwargs):
    """The functional counterpart of ``optim_cls`` with no parameters yet (step them with
    ``step_param``).

    Args:
        optim_cls (type): e.g. ``ember.optim.SGD``.
        *args: its hyper-parameters.
        **kwargs: the keyword arguments, likewise.

    Returns:
        The functional optimizer.

    Raises:
        ValueError: ``optim_cls`` has no functional counterpart.

    Example::

        >>> from ember.distributed.optim import as_functional_optim
        >>> p = ember.ones(2)
        >>> as_functional_optim(ember.optim.SGD, lr=0.5).step_param(p, ember.ones(2)); p
        tensor([0.5000, 0.5000])
    """
    try:
        functional_cls = functional_optim_map[optim_cls]
    except KeyError:
        raise ValueError(f"Optimizer {optim_cls} does not have a functional counterpart!"
                         ) from None
    return _create_functional_optim(functional_cls, *args, **kwargs)

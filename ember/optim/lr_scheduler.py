"""Learning-rate schedules.

Each scheduler sets ``group["lr"]`` of its optimizer's parameter groups on ``step()``. Like
PyTorch's, the updates are "chainable": most schedules compute the new learning rate from
the group's current one, so several schedulers can act on one optimizer. ``state_dict``
holds everything but the optimizer, under PyTorch's keys (``_is_initial``,
``_get_lr_called_within_step``, ``use_beta1``, ``_anneal_func_type``...), so checkpoints
written by either library resume in the other.

Why one file over 1,000 lines: each schedule is short, and they share the base class's
stepping protocol (``_initial_step``/``_update_lr``, ``_is_initial``) closely enough that a
reader needs them side by side, as in PyTorch's own module.
"""

from __future__ import annotations

import functools
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter

from .._core.tensor import Tensor  # noqa: F401 (public here, as in torch)
from .optimizer import Optimizer

inf = math.inf

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the "
    "new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR",
           "ConstantLR", "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
           "CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR", "ReduceLROnPlateau",
           "SequentialLR", "ChainedScheduler"]


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _track_step_called(optimizer):
    """Wrap ``optimizer.step`` (on the instance) so it records that it ran: a scheduler
    stepped before its optimizer's first step skips the schedule's first value, and
    ``LRScheduler.step`` warns about it as PyTorch does."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    step = optimizer.step
    opt_ref = weakref.ref(optimizer)

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        if opt is not None:
            opt._opt_called = True
        return step(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


def _set_group_value(group, key, value):
    """Write a schedule's value into a parameter group: in place when the group holds a
    tensor (a tensor lr stays the same tensor, as captured graphs need), else by
    assignment."""
    current = group[key]
    if isinstance(current, Tensor):
        current.fill_(value.item() if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _group_values(optimizer, key):
    """Every group's ``key``, tensors copied so later in-place updates do not reach the
    list."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key]
            for g in optimizer.param_groups]


class _enable_get_lr_call:  # noqa: N801 (torch's name; third-party schedulers use it)
    """Mark ``get_lr`` as called from inside ``step`` (no warning) for the block."""

    def __init__(self, scheduler):
        self.o = scheduler

    def __enter__(self):
        self.o._get_lr_called_within_step = True
        return self

    def __exit__(self, *exc):
        self.o._get_lr_called_within_step = False


class _initial_mode:  # noqa: N801 (torch's name)
    """Mark the step a scheduler takes at construction (``_is_initial``): the
    chainable schedules leave the lr as it is on that step."""

    def __init__(self, scheduler):
        self.o = scheduler

    def __enter__(self):
        self.o._is_initial = True

    def __exit__(self, *exc):
        self.o._is_initial = False


def _warn_get_lr_outside_step(get_lr):
    """The built-in schedules' ``get_lr`` warns when called outside ``step`` (its value is
    then the next step's, not the current lr), as PyTorch's do."""

    @functools.wraps(get_lr)
    def wrapper(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please "
                          "use `get_last_lr()`.", UserWarning, stacklevel=2)
        return get_lr(self)

    return wrapper


class LRScheduler:
    """Base class of the learning-rate schedules: keeps ``base_lrs`` (the groups'
    ``initial_lr``), ``last_epoch`` and the last lrs; a subclass implements ``get_lr``,
    the lrs of the current epoch, which ``step()`` writes into the groups.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler.

    Example:
        >>> import ember
        >>> class Halving(ember.optim.lr_scheduler.LRScheduler):
        ...     def get_lr(self):
        ...         return [base * 0.5 ** self.last_epoch for base in self.base_lrs]
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
        >>> sched = Halving(opt)
        >>> opt.step()
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.5]
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial = group["lr"]
                if hasattr(initial, "clone"):
                    initial = initial.clone()
                group.setdefault("initial_lr", initial)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.\n"
                        "This typically happens when:\n"
                        "1. You're trying to resume training from a checkpoint but haven't "
                        "properly loaded the optimizer state\n"
                        "2. You're using last_epoch >= 0 for a fresh training run (not "
                        "recommended)")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_step_called(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        with _initial_mode(self):
            self.step()

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rates set by the last ``step``, one per parameter group.

        Returns:
            list of float.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=0.1)
            >>> ember.optim.lr_scheduler.StepLR(opt, 1).get_last_lr()
            [0.1]
        """
        return self._last_lr

    def get_lr(self):
        raise NotImplementedError

    def step(self, epoch=None):
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate "
                    "scheduler initialization. Please, make sure to call `optimizer.step()` "
                    "before `lr_scheduler.step()`. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In "
                    "PyTorch 1.1.0 and later, you should call them in the opposite order: "
                    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                    "will result in PyTorch skipping the first value of the learning rate "
                    "schedule. See more details at "
                    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        # the lr change of one step without counting it (SequentialLR's hand-over uses it)
        with _enable_get_lr_call(self):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


_LRScheduler = LRScheduler


def _lambdas(optimizer, fn, name):
    n = len(optimizer.param_groups)
    if not isinstance(fn, (list, tuple)):
        return [fn] * n
    if len(fn) != n:
        raise ValueError(f"Expected {n} lr_lambdas, but got {len(fn)}")
    return list(fn)


class LambdaLR(LRScheduler):
    """Set each group's lr to its initial lr times ``lr_lambda(epoch)``.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        lr_lambda (callable or list): ``epoch -> factor``, or one function per group.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.0625]
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda, "lr_lambda")
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer",
                                                                     "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(f, types.FunctionType) else f.__dict__.copy()
                               for f in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        state_dict["lr_lambdas"] = lambdas
        for i, fn in enumerate(lambdas):
            if fn is not None:
                self.lr_lambdas[i].__dict__.update(fn)

    def get_lr(self):
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(LRScheduler):
    """Multiply each group's lr by ``lr_lambda(epoch)`` at every step.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        lr_lambda (callable or list): ``epoch -> factor``, or one function per group.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.MultiplicativeLR(opt, lambda epoch: 0.9)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.6561]
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(optimizer, lr_lambda, "lr_lambda")
        super().__init__(optimizer, last_epoch)

    state_dict = LambdaLR.state_dict
    load_state_dict = LambdaLR.load_state_dict

    def get_lr(self):
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        step_size (int): epochs between decays.
        gamma (float): decay factor. Default: 0.1.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.25]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch (twice for a repeated one).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        milestones (list of int): epochs at which to decay.
        gamma (float): decay factor. Default: 0.1.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.1)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.01]
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch]
                for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """Scale the lr by ``factor`` until ``total_iters`` epochs have passed, then restore it.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        factor (float): the scale, in [0, 1]. Default: 1/3.
        total_iters (int): epochs the scale lasts. Default: 5.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [1.0]
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError(
                "Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self):
        return [b * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for b in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters``
    epochs (a warm-up, typically).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        start_factor (float): scale at the start, in (0, 1]. Default: 1/3.
        end_factor (float): scale at the end, in [0, 1]. Default: 1.0.
        total_iters (int): epochs of the ramp. Default: 5.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.LinearLR(opt, start_factor=0.2, total_iters=8)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.6]
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 "
                             "and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor, self.end_factor, self.total_iters = (start_factor, end_factor,
                                                                 total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        s, e, t = self.start_factor, self.end_factor, self.total_iters
        return [g["lr"] * (1.0 + (e - s) / (t * s + (self.last_epoch - 1) * (e - s)))
                for g in groups]

    def _get_closed_form_lr(self):
        s, e, t = self.start_factor, self.end_factor, self.total_iters
        return [b * (s + (e - s) * min(t, self.last_epoch) / t) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        gamma (float): decay factor.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.0625]
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr polynomially to zero over ``total_iters`` epochs.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        total_iters (int): epochs until the lr reaches zero. Default: 5.
        power (float): the polynomial's power. Default: 1.0.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.PolynomialLR(opt, total_iters=8, power=1.0)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.5]
    """

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return _group_values(self.optimizer, "lr")
        decay = ((1.0 - self.last_epoch / self.total_iters) /
                 (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * decay for g in groups]

    def _get_closed_form_lr(self):
        return [b * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_max`` epochs (Loshchilov
    & Hutter, 2017, without restarts).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        T_max (int): epochs of the half cosine.
        eta_min (float): the lowest lr. Default: 0.0.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.CosineAnnealingLR(opt, T_max=8)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.5]
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        e, tm, m = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return _group_values(self.optimizer, "lr")
        if self._step_count == 1 and e > 0:
            return [m + (b - m) * (1 + math.cos(e * math.pi / tm)) / 2 for b in self.base_lrs]
        if (e - 1 - tm) % (2 * tm) == 0:
            return [g["lr"] + (b - m) * (1 - math.cos(math.pi / tm)) / 2
                    for b, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * e / tm)) / (1 + math.cos(math.pi * (e - 1) / tm)) *
                (g["lr"] - m) + m for g in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (b - self.eta_min) *
                (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR: cosine annealing restarted every ``T_0`` epochs, periods growing by
    ``T_mult`` (Loshchilov & Hutter, 2017).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        T_0 (int): epochs of the first period.
        T_mult (int): growth factor of the period after each restart. Default: 1.
        eta_min (float): the lowest lr. Default: 0.0.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [1.0]
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):  # noqa: N803
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (b - self.eta_min) *
                (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for b in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        # like torch's, this step does not count itself in _step_count (it stays 0), so
        # the step-order warnings of LRScheduler.step never fire for this schedule
        with _enable_get_lr_call(self):
            values = self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")


def _uses_beta1(optimizer):
    """Whether a momentum-cycling schedule cycles ``betas[0]`` (Adam-like optimizers)
    rather than ``momentum``; refuses optimizers with neither."""
    defaults = optimizer.defaults
    if "momentum" not in defaults and "betas" not in defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    return "betas" in defaults


def _set_momentum(group, use_beta1, value):
    if use_beta1:
        group["betas"] = (value,) + tuple(group["betas"][1:])
    else:
        group["momentum"] = value


def _per_group(optimizer, value, name):
    """One value per parameter group (a scalar repeated, or a list checked for length),
    tensors copied."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
    else:
        value = [value] * n
    return [v.clone() if isinstance(v, Tensor) else v for v in value]


class CyclicLR(LRScheduler):
    """Cyclical learning rates between ``base_lr`` and ``max_lr`` (Smith, 2017), stepped
    every batch; momentum cycles the opposite way.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        base_lr (float or list): lower bound of the cycle.
        max_lr (float or list): upper bound of the cycle.
        step_size_up (int): steps of the rising half. Default: 2000.
        step_size_down (int, optional): steps of the falling half (default: same as up).
        mode (str): ``"triangular"``, ``"triangular2"`` or ``"exp_range"``.
        gamma (float): decay per step in ``"exp_range"``. Default: 1.0.
        scale_fn (callable, optional): custom amplitude scaling (overrides ``mode``).
        scale_mode (str): ``"cycle"`` or ``"iterations"``, the argument of ``scale_fn``.
        cycle_momentum (bool): cycle momentum too. Default: True.
        base_momentum, max_momentum (float or list): momentum bounds. Default: 0.8, 0.9.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.CyclicLR(opt, base_lr=0.1, max_lr=1.0, step_size_up=8)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.55]
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        _check_optimizer(optimizer)
        base_lrs = _per_group(optimizer, base_lr, "base_lr")
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_group_value(group, "lr", lr)
        self.max_lrs = _per_group(optimizer, max_lr, "max_lr")
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            self.base_momentums = _per_group(optimizer, base_momentum, "base_momentum")
            self.max_momentums = _per_group(optimizer, max_momentum, "max_momentum")
            if last_epoch == -1:
                for mm, bm, group in zip(self.max_momentums, self.base_momentums,
                                         optimizer.param_groups):
                    _set_momentum(group, self.use_beta1, mm)
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self):
        # the built-in modes' scale functions are rebuilt from mode/gamma (not pickled)
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = functools.partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    @staticmethod
    def _triangular_scale_fn(x):
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x):
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma, x):
        return gamma ** x

    def scale_fn(self, x):
        """The amplitude scale at ``x`` (the cycle number or the iteration, per
        ``scale_mode``): the custom ``scale_fn`` if one was given, else the mode's.

        Args:
            x (float): the cycle number or iteration.

        Returns:
            float.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0,
            ...                       momentum=0.9)
            >>> sched = ember.optim.lr_scheduler.CyclicLR(opt, 0.1, 1.0, mode="triangular2")
            >>> sched.scale_fn(3)
            0.25
        """
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            factor = x / self.step_ratio
        else:
            factor = (x - 1) / (self.step_ratio - 1)
        arg = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [b + (m - b) * factor * self.scale_fn(arg)
               for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, bm, mm in zip(self.optimizer.param_groups, self.base_momentums,
                                     self.max_momentums):
                _set_momentum(group, self.use_beta1,
                              mm - (mm - bm) * factor * self.scale_fn(arg))
        return lrs

    def state_dict(self):
        # a custom scale function is kept only as its attributes (a callable object's
        # __dict__), a plain function as None, as in torch's checkpoints
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict):
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        state_dict["_scale_fn_custom"] = fn
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up to ``max_lr`` then anneal far below the start (Smith &
    Topin, 2018); momentum cycles inversely. Stepped every batch.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        max_lr (float or list): the peak lr.
        total_steps (int, optional): length of the cycle (or give epochs and
            steps_per_epoch).
        epochs, steps_per_epoch (int, optional): the cycle is their product.
        pct_start (float): fraction of the cycle spent warming up. Default: 0.3.
        anneal_strategy (str): ``"cos"`` or ``"linear"``. Default: ``"cos"``.
        cycle_momentum (bool): cycle momentum too. Default: True.
        base_momentum, max_momentum (float or list): momentum bounds. Default: 0.85, 0.95.
        div_factor (float): initial lr is ``max_lr / div_factor``. Default: 25.
        final_div_factor (float): final lr is ``initial_lr / final_div_factor``.
            Default: 1e4.
        three_phase (bool): anneal back to the initial lr before the final decay.
        last_epoch (int): index of the last epoch, for resuming. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0, momentum=0.9)
        >>> sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.811746]
    """

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True,
                 base_momentum=0.85, max_momentum=0.95, div_factor=25.0,
                 final_div_factor=1e4, three_phase=False, last_epoch=-1):
        _check_optimizer(optimizer)
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got "
                                 f"{total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(f"Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if not 0 <= pct_start <= 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        t = self.total_steps
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * t) - 1, "start_lr": "initial_lr",
                 "end_lr": "max_lr", "start_momentum": "max_momentum",
                 "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * t) - 2, "start_lr": "max_lr",
                 "end_lr": "initial_lr", "start_momentum": "base_momentum",
                 "end_momentum": "max_momentum"},
                {"end_step": t - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * t) - 1, "start_lr": "initial_lr",
                 "end_lr": "max_lr", "start_momentum": "max_momentum",
                 "end_momentum": "base_momentum"},
                {"end_step": t - 1, "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        # (set after the phases: a state dict lists them in PyTorch's order)
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group(optimizer, max_lr, "max_lr")
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = _uses_beta1(optimizer)
            bms = _per_group(optimizer, base_momentum, "base_momentum")
            mms = _per_group(optimizer, max_momentum, "max_momentum")
            if last_epoch == -1:
                for mm, bm, group in zip(mms, bms, optimizer.param_groups):
                    _set_momentum(group, self.use_beta1, mm)
                    group["max_momentum"] = mm
                    group["base_momentum"] = bm
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        # the strategy is kept by name (_anneal_func_type) so state_dicts pickle; a
        # scheduler unpickled from an older torch carries the function itself instead
        kind = getattr(self, "_anneal_func_type", None)
        if kind is None:
            return self.anneal_func(start, end, pct)
        if kind == "cos":
            return self._annealing_cos(start, end, pct)
        if kind == "linear":
            return self._annealing_linear(start, end, pct)
        raise ValueError(f"Unknown _anneal_func_type: {kind}")

    @staticmethod
    def _annealing_cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]],
                                           pct)
                    if self.cycle_momentum:
                        m = self._anneal_func(group[phase["start_momentum"]],
                                              group[phase["end_momentum"]], pct)
                    break
                start = end
            lrs.append(lr)
            if self.cycle_momentum:
                _set_momentum(group, self.use_beta1, m)
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Reduce the lr by ``factor`` when a metric stops improving for ``patience`` epochs;
    ``step(metric)`` takes the metric.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        mode (str): ``"min"`` (lower is better) or ``"max"``. Default: ``"min"``.
        factor (float): multiplier of the lr on a reduction, < 1. Default: 0.1.
        patience (int): epochs without improvement tolerated. Default: 10.
        threshold (float): the least change that counts as improvement. Default: 1e-4.
        threshold_mode (str): ``"rel"`` or ``"abs"`` threshold. Default: ``"rel"``.
        cooldown (int): epochs to wait after a reduction. Default: 0.
        min_lr (float or list): lower bound of the lr. Default: 0.
        eps (float): reductions smaller than this are skipped. Default: 1e-8.

    Returns:
        A scheduler.

    Example:
        >>> import ember
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
        >>> sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step(1.0)  # the metric never improves
        >>> sched.get_last_lr()
        [0.1]
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise ValueError(f"expected {n} min_lrs, got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * n
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _group_values(optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _is_better(self, a, best):
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None):
        """Record one epoch's metric and reduce the lr after ``patience`` epochs without
        improvement.

        Args:
            metrics (float or Tensor): the monitored quantity.
            epoch (int, optional): deprecated; the epoch number.

        Returns:
            None.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
            >>> sched = ember.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0)
            >>> sched.step(1.0); sched.step(2.0)
            >>> sched.get_last_lr()
            [0.1]
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _group_values(self.optimizer, "lr")

    def _reduce_lr(self, epoch):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            # a group added since construction: a scalar min_lr extends to it, a list cannot
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` "
                    "param groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for i, group in enumerate(groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                _set_group_value(group, "lr", new)

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(mode=self.mode, threshold=self.threshold,
                             threshold_mode=self.threshold_mode)

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0


def _check_composed(composite, schedulers, optimizer):
    """The schedulers a SequentialLR/ChainedScheduler composes: each has an optimizer,
    the same one, and none is a ReduceLROnPlateau (its ``step`` needs the metric)."""
    name = type(composite).__name__
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{name} at index {i} should have `optimizer` as its attribute.")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(
                f"{name} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at "
                f"index {i} in the given schedulers sequence.")
        if optimizer != s.optimizer:
            raise ValueError(
                f"{name} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {type(s).__name__} at index {i} has {s.optimizer}, which is "
                f"different from {type(optimizer).__name__}.")


class SequentialLR(LRScheduler):
    """Hand over from one scheduler to the next at each milestone.

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        schedulers (list): the schedulers, in order, all on ``optimizer``.
        milestones (list of int): the epochs at which the next one takes over.
        last_epoch (int): index of the last epoch. Default: -1.

    Returns:
        A scheduler.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
        >>> warmup = lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2)
        >>> decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> sched = lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[2])
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> sched.get_last_lr()
        [0.25]
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler, but got "
                             "no scheduler.")
        _check_composed(self, schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            _set_group_value(group, "lr", group["initial_lr"])
        # the schedulers each stepped once when built; undo that, then let the one that
        # owns epoch 0 take the initial step
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None):
        """Step back ``last_epoch`` of every scheduler inside this one (nested
        ``SequentialLR``/``ChainedScheduler`` included) by one.

        Args:
            sched (optional): the scheduler to undo; default: this one's schedulers.

        Returns:
            None.

        Example:
            >>> import ember
            >>> from ember.optim import lr_scheduler
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
            >>> a = lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
            >>> seq = lr_scheduler.SequentialLR(opt, [a, lr_scheduler.StepLR(opt, 1)], [2])
            >>> a.last_epoch
            0
            >>> seq.recursive_undo(); a.last_epoch
            -1
        """
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            s._update_lr(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer",
                                                                     "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        schedulers = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        state_dict["_schedulers"] = schedulers
        for s, sd in zip(self._schedulers, schedulers):
            s.load_state_dict(sd)


class ChainedScheduler(LRScheduler):
    """Step several schedulers together (their effects compose).

    Args:
        schedulers (list): the schedulers, all on one optimizer.
        optimizer (Optimizer, optional): that optimizer (taken from the first scheduler).

    Returns:
        A scheduler.

    Example:
        >>> import ember
        >>> from ember.optim import lr_scheduler
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
        >>> sched = lr_scheduler.ChainedScheduler([
        ...     lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2),
        ...     lr_scheduler.ExponentialLR(opt, gamma=0.5)])
        >>> for _ in range(4):
        ...     opt.step()
        ...     sched.step()
        >>> sched.get_last_lr()
        [0.0625]
    """

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{type(self).__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_composed(self, schedulers, optimizer)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    def step(self):
        for s in self._schedulers:
            s.step()
        self._last_lr = _group_values(self._schedulers[-1].optimizer, "lr")

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict



for _cls in (LambdaLR, MultiplicativeLR, StepLR, MultiStepLR, ConstantLR, LinearLR,
             ExponentialLR, PolynomialLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
             CyclicLR, OneCycleLR):
    _cls.get_lr = _warn_get_lr_outside_step(_cls.__dict__["get_lr"])
del _cls

"""Stochastic weight averaging (Izmailov et al., 2018) and exponential moving averages.

``AveragedModel`` keeps a copy of a model whose parameters are a running average of the
model's; the averaging rule is a function, either per tensor (``avg_fn``) or over the whole
list at once (``multi_avg_fn``), and the four ``get_*_fn`` factories make the usual ones.
``SWALR`` anneals the learning rate to a constant for the averaging phase, and ``update_bn``
recomputes BatchNorm statistics for the averaged weights.
"""

from __future__ import annotations

import copy
import itertools
import math

from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _warn_get_lr_outside_step

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(
            f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_avg_fn(decay=0.999):
    """A per-tensor exponential-moving-average rule for ``AveragedModel(avg_fn=...)``.

    Args:
        decay (float): weight of the running average, in [0, 1]. Default: 0.999.

    Returns:
        ``fn(averaged, current, num_averaged)`` returning ``decay * averaged +
        (1 - decay) * current``.

    Example:
        >>> import ember
        >>> fn = get_ema_avg_fn(0.9)
        >>> fn(ember.tensor([1.0]), ember.tensor([2.0]), 3)
        tensor([1.1000])
    """
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """A per-tensor equal-weight running-mean rule for ``AveragedModel(avg_fn=...)``.

    Returns:
        ``fn(averaged, current, num_averaged)`` returning the mean of ``num_averaged + 1``
        values, ``averaged + (current - averaged) / (num_averaged + 1)``.

    Example:
        >>> import ember
        >>> fn = get_swa_avg_fn()
        >>> fn(ember.tensor([1.0]), ember.tensor([4.0]), 2)
        tensor([2.])
    """

    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place exponential-moving-average rule over lists, for
    ``AveragedModel(multi_avg_fn=...)``.

    Args:
        decay (float): weight of the running average, in [0, 1]. Default: 0.999.

    Returns:
        ``fn(averaged_list, current_list, num_averaged)`` that moves each averaged tensor
        ``1 - decay`` of the way to its current value, in place.

    Example:
        >>> import ember
        >>> avg = [ember.tensor([1.0])]
        >>> get_ema_multi_avg_fn(0.5)(avg, [ember.tensor([3.0])], 1)
        >>> avg[0]
        tensor([2.])
    """
    _check_decay(decay)

    def ema_update(ema_params, current_params, num_averaged):
        with no_grad():
            if ema_params[0].is_floating_point() or ema_params[0].is_complex():
                for e, c in zip(ema_params, current_params):
                    e.lerp_(c, 1 - decay)
            else:
                for e, c in zip(ema_params, current_params):
                    e.copy_(e * decay + c * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place equal-weight running-mean rule over lists, for
    ``AveragedModel(multi_avg_fn=...)``.

    Returns:
        ``fn(averaged_list, current_list, num_averaged)`` that makes each averaged tensor the
        mean of ``num_averaged + 1`` values, in place.

    Example:
        >>> import ember
        >>> avg = [ember.tensor([1.0])]
        >>> get_swa_multi_avg_fn()(avg, [ember.tensor([4.0])], 2)
        >>> avg[0]
        tensor([2.])
    """

    def swa_update(averaged_params, current_params, num_averaged):
        with no_grad():
            if averaged_params[0].is_floating_point() or averaged_params[0].is_complex():
                weight = 1 / (num_averaged + 1)
                if hasattr(weight, "item"):
                    weight = weight.item()
                for a, c in zip(averaged_params, current_params):
                    a.lerp_(c, weight)
            else:
                for a, c in zip(averaged_params, current_params):
                    a.copy_(a + (c - a) / (num_averaged + 1))

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters average the model's over ``update_parameters``
    calls (SWA by default, EMA with ``get_ema_multi_avg_fn``).

    The first ``update_parameters`` copies the model; later ones apply the averaging rule.
    Buffers are copied from the model each time, unless ``use_buffers=True`` averages them
    along with the parameters. ``n_averaged`` (a buffer, so it is in the state_dict) counts
    the updates.

    Args:
        model (Module): the model to average; deep-copied.
        device (device, optional): where the averaged copy lives.
        avg_fn (callable, optional): ``avg_fn(averaged, current, num_averaged)`` returning the
            new average of one tensor.
        multi_avg_fn (callable, optional): ``multi_avg_fn(averaged_list, current_list,
            num_averaged)`` updating the averages in place. At most one of the two.
        use_buffers (bool): average buffers too (and parameters and buffers of
            ``self.module``). Default: False.

    Returns:
        A module that runs the averaged copy in ``forward``.

    Example:
        >>> import ember
        >>> model = ember.nn.Linear(2, 1)
        >>> swa = AveragedModel(model)
        >>> swa.update_parameters(model)
        >>> int(swa.n_averaged)
        1
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        from .. import long, tensor

        self.register_buffer("n_averaged", tensor(0, dtype=long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Run the averaged copy of the model.

        Args:
            *args, **kwargs: the model's inputs.

        Returns:
            The averaged model's output.

        Example:
            >>> import ember
            >>> swa = AveragedModel(ember.nn.Linear(2, 1))
            >>> swa(ember.ones(3, 2)).shape
            ember.Size([3, 1])
        """
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters (and buffers, with ``use_buffers``) into the
        average.

        Args:
            model (Module): the model being trained, shaped like the averaged one.

        Returns:
            None.

        Example:
            >>> import ember
            >>> model = ember.nn.Linear(2, 1)
            >>> swa = AveragedModel(model)
            >>> swa.update_parameters(model)
            >>> bool((swa.module.weight == model.weight).all())
            True
        """
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        with no_grad():
            pairs = [(a.detach(), c.detach().to(a.device)) for a, c in zip(mine, theirs)]
            if self.n_averaged.item() == 0:
                for a, c in pairs:
                    a.copy_(c)
            elif self.avg_fn is not None:
                for a, c in pairs:
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            elif pairs:
                # the list rule runs once per (device, dtype) group, as torch groups them
                groups = {}
                for a, c in pairs:
                    groups.setdefault((str(a.device), a.dtype), []).append((a, c))
                for (device, _), group in groups.items():
                    n = self.n_averaged.to(device)
                    avgs, currents = [a for a, _ in group], [c for _, c in group]
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(avgs, currents, n)
                    else:
                        rule = get_swa_avg_fn()
                        for a, c in group:
                            a.copy_(rule(a, c, n))
            if not self.use_buffers:
                for a, c in zip(self.module.buffers(), model.buffers()):
                    a.detach().copy_(c.detach().to(a.device))
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None):
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader``.

    Running means and variances are reset and re-estimated as plain averages over the
    batches (momentum ``None``); the model's momentum values and training mode are restored.

    Args:
        loader (iterable): batches of inputs; a list or tuple batch contributes its first
            element.
        model (Module): the model whose BatchNorm layers are updated.
        device (device, optional): where to move each batch first.

    Returns:
        None.

    Example:
        >>> import ember
        >>> model = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4))
        >>> update_bn([ember.randn(8, 3) for _ in range(2)], model)
        >>> int(model[1].num_batches_tracked)
        2
    """
    from ..nn.modules.normalization import _BatchNorm

    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps, then hold
    it there (the schedule of the averaging phase of SWA).

    Args:
        optimizer (Optimizer): the wrapped optimizer.
        swa_lr (float or list): the target learning rate, or one per parameter group.
        anneal_epochs (int): steps of annealing; 0 jumps straight to ``swa_lr``. Default: 10.
        anneal_strategy (str): ``"cos"`` or ``"linear"``. Default: ``"cos"``.
        last_epoch (int): the index of the last epoch. Default: -1.

    Returns:
        A scheduler; each ``step()`` sets the groups' ``lr``.

    Example:
        >>> import ember
        >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
        >>> sched = SWALR(opt, swa_lr=0.1, anneal_epochs=2, anneal_strategy="linear")
        >>> for _ in range(2):
        ...     opt.step()
        ...     sched.step()
        >>> round(opt.param_groups[0]["lr"], 6)
        0.1
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        if isinstance(swa_lr, (list, tuple)):
            if len(swa_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"swa_lr must have the same length as optimizer.param_groups. swa_lr has "
                    f"{len(swa_lr)} values, param_groups has {len(optimizer.param_groups)}.")
            lrs = list(swa_lr)
        else:
            lrs = [swa_lr] * len(optimizer.param_groups)
        for lr, group in zip(lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self._set_anneal_func(anneal_strategy)
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy):
        # the strategy's name is state (it pickles); the function is rebuilt from it
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def state_dict(self):
        """The scheduler's state, everything but the optimizer and the anneal function.

        Returns:
            dict.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
            >>> SWALR(opt, swa_lr=0.1).state_dict()["_anneal_strategy"]
            'cos'
        """
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore the state saved by ``state_dict`` (also one saved by PyTorch).

        Args:
            state_dict (dict): the saved state.

        Returns:
            None.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
            >>> sched = SWALR(opt, swa_lr=0.1)
            >>> sched.load_state_dict(SWALR(opt, swa_lr=0.1, anneal_strategy="linear")
            ...                       .state_dict())
            >>> sched.anneal_func is SWALR._linear_anneal
            True
        """
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        """The learning rates of this step, one per group.

        Returns:
            list of float.

        Example:
            >>> import ember
            >>> opt = ember.optim.SGD([ember.nn.Parameter(ember.zeros(1))], lr=1.0)
            >>> sched = SWALR(opt, swa_lr=0.5, anneal_epochs=0)
            >>> sched.get_last_lr()  # get_lr() itself is what step() calls
            [0.5]
        """
        # recover the lr the anneal started from, since groups hold only the current one
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha)
                    for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha)
                for g, lr in zip(self.optimizer.param_groups, prev_lrs)]


SWALR.get_lr = _warn_get_lr_outside_step(SWALR.__dict__["get_lr"])

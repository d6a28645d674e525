"""``PostLocalSGDOptimizer`` (``torch.distributed.optim.PostLocalSGDOptimizer``): a local
optimizer followed, at every step, by a model averager (post-local SGD)."""

from __future__ import annotations

import warnings

from ...optim.optimizer import Optimizer

__all__ = ["PostLocalSGDOptimizer"]


class PostLocalSGDOptimizer(Optimizer):
    """Run ``optim`` at every step, then let ``averager`` average the parameters (it
    decides when: e.g. every ``period`` steps after a warm-up).

    The wrapper shares ``optim``'s ``param_groups`` and ``state``; its ``state_dict`` adds
    the averager's step count (key ``"step"``) so a reloaded run does not warm up again.

    Args:
        optim: the local optimizer (e.g. ``ember.optim.SGD``).
        averager: a ``ModelAverager`` (e.g. ``PeriodicModelAverager``).

    Example::

        >>> from ember.distributed.algorithms.model_averaging import averagers
        >>> local = ember.optim.SGD(model.parameters(), lr=0.01)  # doctest: +SKIP
        >>> averager = averagers.PeriodicModelAverager(period=4, warmup_steps=100)  # doctest: +SKIP
        >>> opt = PostLocalSGDOptimizer(local, averager)  # doctest: +SKIP
        >>> loss.backward(); opt.step()  # doctest: +SKIP
    """

    def __init__(self, optim, averager):
        self.optim = optim
        self.param_groups = optim.param_groups
        self.averager = averager

    @property
    def state(self):
        """The local optimizer's per-parameter state."""
        return self.optim.state

    def __repr__(self):
        return repr(self.optim)

    def state_dict(self) -> dict:
        """The local optimizer's state dict plus ``"step"``, the averager's step count.

        Returns:
            dict
        """
        sd = self.optim.state_dict()
        sd["step"] = self.averager.step
        return sd

    def load_state_dict(self, state_dict) -> None:
        """Load the local optimizer's state and restore the averager's step count (0, with
        a warning, when ``state_dict`` has no ``"step"``).

        Args:
            state_dict: a dict from ``state_dict()``.
        """
        self.optim.load_state_dict(state_dict)
        if "step" in state_dict:
            self.averager.step = state_dict["step"]
        else:
            warnings.warn("Loaded state dict does not contain a step counter for an averager. "
                          "Setting step counter to 0.", stacklevel=2)
            self.averager.step = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients (as the local optimizer's ``zero_grad``).

        Args:
            set_to_none (bool): set ``.grad`` to None instead of zeroing it.
        """
        self.optim.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group) -> None:
        """Add a parameter group to the local optimizer.

        Args:
            param_group (dict): ``params`` and optional hyper-parameters.
        """
        self.optim.add_param_group(param_group)


def _step(self):
    """One local optimizer step, then ``averager.average_parameters(param_groups)``."""
    self.optim.step()
    self.averager.average_parameters(params=self.param_groups)


# set after the class is made, so ``Optimizer.__init_subclass__`` does not wrap it: the
# step hooks run once, around the local optimizer's step (as in PyTorch)
_step.__name__, _step.__qualname__ = "step", "PostLocalSGDOptimizer.step"
PostLocalSGDOptimizer.step = _step

"""``Join``: training with uneven inputs across ranks (``torch.distributed.algorithms.join``).

NOTE [ Join protocol ]
Inside ``with Join([model, ...]):`` every rank that still has data announces itself once
per iteration: the first joinable's ``notify_join_context`` all-reduces a one (its
communication carries on asynchronously). A rank that has run out of data leaves the
``with`` body and, in ``__exit__``, repeatedly all-reduces a zero: the sum is the number of
ranks still training. While it is not zero, the joined rank runs every joinable's
``main_hook``, which issues the same collectives the training ranks issue in one
iteration (for DDP: the buffer broadcast and one all-reduce of zeros per gradient bucket),
so that nobody waits forever. When every rank has joined, each runs ``post_hook`` (DDP
copies the model of the last rank to join onto the others).
With ``throw_on_early_termination=True`` the training ranks also all-reduce a zero each
iteration; a joined rank answers with a one and raises, and so do they.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod

__all__ = ["Join", "JoinHook", "Joinable"]


class JoinHook:
    """What a joined rank runs for a ``Joinable``: ``main_hook`` once per iteration that the
    other ranks still train, ``post_hook`` once all have joined. Both do nothing here.

    Example::

        >>> h = ember.distributed.algorithms.JoinHook()
        >>> h.main_hook(), h.post_hook(True)
        (None, None)
    """

    def main_hook(self) -> None:
        """Shadow one training iteration's collectives."""

    def post_hook(self, is_last_joiner: bool) -> None:
        """Run once every rank has joined.

        Args:
            is_last_joiner: whether this rank was the last to join.
        """


class _JoinConfig:
    def __init__(self, enable=False, throw_on_early_termination=False, is_first_joinable=False):
        self.enable = enable
        self.throw_on_early_termination = throw_on_early_termination
        self.is_first_joinable = is_first_joinable

    @staticmethod
    def construct_disabled_join_config():
        return _JoinConfig()


class Joinable(ABC):
    """Base class of objects that take part in ``Join``: they provide ``join_hook()``,
    ``join_device`` and ``join_process_group``, and call ``Join.notify_join_context(self)``
    at the start of each iteration's communication. Subclasses call
    ``super().__init__()``.

    Example::

        >>> sorted(ember.distributed.algorithms.Joinable.__abstractmethods__)
        ['__init__', 'join_device', 'join_hook', 'join_process_group']
    """

    @abstractmethod
    def __init__(self):
        super().__init__()
        self._join_config = _JoinConfig.construct_disabled_join_config()

    @abstractmethod
    def join_hook(self, **kwargs) -> JoinHook:
        """The ``JoinHook`` a joined rank runs for this object."""

    @property
    @abstractmethod
    def join_device(self):
        """The device the join collectives run on."""

    @property
    @abstractmethod
    def join_process_group(self):
        """The process group the join collectives run in."""


class Join:
    """A context manager for training with a different number of inputs on each rank
    (see NOTE [ Join protocol ]).

    Args:
        joinables: the ``Joinable`` objects taking part (e.g. a DDP model, a
            ZeroRedundancyOptimizer); they must share one process group.
        enable: False turns the context into a no-op.
        throw_on_early_termination: raise on every rank as soon as one runs out of data,
            instead of shadowing the others.
        **kwargs: passed to each joinable's ``join_hook``.

    Raises:
        ValueError: no joinables.

    Example::

        >>> with Join([ddp_model]):  # doctest: +SKIP
        ...     for x in my_uneven_batches:
        ...         ddp_model(x).sum().backward()
    """

    def __init__(self, joinables, enable=True, throw_on_early_termination=False, **kwargs):
        if len(joinables) == 0:
            raise ValueError("The join context manager requires at least one joinable")
        self._joinables = list(joinables)
        self._join_hooks = [j.join_hook(**kwargs) for j in self._joinables]
        self._enable = enable
        self._throw_on_early_termination = throw_on_early_termination
        self._set_joinable_configs()
        self._extract_dist_info()

    def _set_joinable_configs(self):
        for i, joinable in enumerate(self._joinables):
            joinable._join_config = _JoinConfig(self._enable, self._throw_on_early_termination,
                                                i == 0)

    def _extract_dist_info(self):
        from ... import distributed as dist

        groups = {id(j.join_process_group) for j in self._joinables}
        if len(groups) > 1:
            raise ValueError("Using join context manager with multiple process groups")
        self._process_group = self._joinables[0].join_process_group
        self._device = self._joinables[0].join_device
        self._rank = dist.get_rank(self._process_group)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, value, traceback):
        if not self._enable or exc_type is not None:
            return
        all_joined, is_last_joiner, rounds = False, True, 0
        while not all_joined:
            if rounds == 1000:
                warnings.warn(f"Detected uneven input skew of greater than 1000. This means "
                              f"that rank {self._rank} has at least 1000 fewer inputs than "
                              "other currently-active ranks. This level of skew could lead "
                              "to performance degradation during training.", stacklevel=2)
            if self._count_nonjoined() == 0:
                all_joined = True
            else:
                if self._throw_on_early_termination:
                    self._notify_procs_to_terminate()
                for hook in self._join_hooks:
                    hook.main_hook()
                is_last_joiner = False
                rounds += 1
        for hook in self._join_hooks:
            hook.post_hook(is_last_joiner)
        for joinable in self._joinables:
            joinable._join_config = _JoinConfig.construct_disabled_join_config()

    def _count_nonjoined(self) -> int:
        from ... import distributed as dist, zeros

        t = zeros(1)
        dist.all_reduce(t, group=self._process_group)
        return int(t.item())

    def _notify_procs_to_terminate(self):
        from ... import distributed as dist, ones

        dist.all_reduce(ones(1), group=self._process_group)
        raise RuntimeError(f"Rank {self._rank} exhausted all inputs.")

    @staticmethod
    def notify_join_context(joinable):
        """Tell the join context that this rank has not joined (once per iteration, before
        ``joinable``'s collectives); check for early termination if asked.

        Args:
            joinable: the calling ``Joinable``.

        Returns:
            The ``Work`` handle of the announcing all-reduce (its value is the number of
            ranks still training) if ``joinable`` is the context's first, else None.

        Raises:
            RuntimeError: ``throw_on_early_termination`` and some rank has joined.
        """
        from ... import distributed as dist, ones, zeros

        config = getattr(joinable, "_join_config", None)
        if config is None:
            raise AssertionError(f"Check that the {type(joinable)} constructor calls the "
                                 "``Joinable`` constructor")
        if not config.is_first_joinable or not config.enable:
            return None
        group = joinable.join_process_group
        count = ones(1)
        work = dist.all_reduce(count, group=group, async_op=True)
        work._count = count
        if config.throw_on_early_termination:
            flag = zeros(1)
            dist.all_reduce(flag, group=group)
            if flag.item():
                raise RuntimeError("Detected at least one rank that exhausted inputs. "
                                   "Throwing across all ranks.")
        return work

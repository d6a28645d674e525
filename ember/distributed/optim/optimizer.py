"""``DistributedOptimizer``: one optimizer over parameters that live on several workers
(``torch.distributed.optim.optimizer``)."""

from __future__ import annotations

import threading
from collections import defaultdict

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    """The part of a DistributedOptimizer on one worker: an ordinary optimizer over the
    parameters this worker owns, stepped with a distributed-autograd context's gradients.
    Steps on one worker are serialised (one lock per worker), as PyTorch does."""

    _lock = threading.Lock()

    def __init__(self, optim_cls, local_params_rref, *args, **kwargs):
        self._params = [rref.local_value() for rref in local_params_rref]
        self.optim = optim_cls(self._params, *args, **kwargs)

    def step(self, autograd_ctx_id):
        from .. import autograd as dist_autograd

        grads = dist_autograd.get_gradients(autograd_ctx_id)
        with _LocalOptimizer._lock:
            for p in self._params:
                g = grads.get(p)
                p.grad = None if g is None else g
            self.optim.step()


def _new_local_optimizer(optim_cls, local_params_rref, args, kwargs):
    from .. import rpc

    return rpc.RRef(_LocalOptimizer(optim_cls, local_params_rref, *args, **kwargs))


def _local_optimizer_step(local_optim_rref, autograd_ctx_id):
    local_optim_rref.local_value().step(autograd_ctx_id)


class DistributedOptimizer:
    """An optimizer over parameters held by RRefs on any workers: each owner runs
    ``optimizer_class`` on its own parameters, and ``step(context_id)`` steps them all
    with the gradients that ``ember.distributed.autograd.backward`` left in that context.

    Args:
        optimizer_class (type): a local optimizer, e.g. ``ember.optim.SGD``.
        params_rref (list[RRef]): RRefs to the parameters (each owned by some worker).
        *args: passed to ``optimizer_class`` on every owner.
        **kwargs: the keyword arguments, likewise.

    Example::

        >>> opt = DistributedOptimizer(ember.optim.SGD, param_rrefs, lr=0.05)  # doctest: +SKIP
        >>> with dist_autograd.context() as cid:                              # doctest: +SKIP
        ...     dist_autograd.backward(cid, [loss])
        ...     opt.step(cid)
    """

    def __init__(self, optimizer_class, params_rref, *args, **kwargs):
        from .. import rpc

        per_owner = defaultdict(list)
        for rref in params_rref:
            per_owner[rref.owner()].append(rref)
        self.is_functional_optim = False
        self.remote_optimizers = [
            rpc.rpc_async(owner, _new_local_optimizer,
                          args=(optimizer_class, rrefs, args, kwargs))
            for owner, rrefs in per_owner.items()
        ]
        self.remote_optimizers = [f.wait() for f in self.remote_optimizers]

    def step(self, context_id: int) -> None:
        """Step every owner's optimizer with the gradients of ``context_id``.

        Args:
            context_id (int): the distributed-autograd context whose backward ran.

        Raises:
            The first error an owner's step raised (after all have finished).

        Example::

            >>> opt.step(context_id)    # doctest: +SKIP
        """
        from .. import rpc

        futs = [rpc.rpc_async(o.owner(), _local_optimizer_step, args=(o, context_id))
                for o in self.remote_optimizers]
        errors = []
        for f in futs:
            try:
                f.wait()
            except Exception as e:  # noqa: BLE001 - raised once all steps are done
                errors.append(e)
        if errors:
            raise errors[0]

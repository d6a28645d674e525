"""``DistributedDataParallel``: one process per replica, gradients averaged between them.

NOTE [ DDP buckets ]
At construction the parameters that need gradients are grouped, in reverse registration
order (roughly the order backward produces their gradients), into buckets of one dtype:
the first holds up to 1 MiB, the others up to ``bucket_cap_mb`` (25 MB by default), as in
PyTorch. Each bucket owns one flat buffer. A post-accumulate-grad hook on every parameter
copies its fresh ``.grad`` into the bucket, divided by the world size; when a bucket's last
gradient arrives, an asynchronous all-reduce (SUM) of its buffer is started, so
communication overlaps the rest of backward. Buckets are launched strictly in index order
(a bucket that fills early waits for its predecessors) because every rank must issue the
collectives in the same order. When the last bucket has been launched, the hook that
launched it waits for all of them and writes the averaged gradients back into ``.grad``,
so ``backward()`` returns with synchronized gradients.

With ``find_unused_parameters=True`` the forward walks the autograd graph of its output;
parameters it does not reach are counted as ready at once (zeros in the bucket), and a
small all-reduce of "used" flags at the end leaves ``.grad`` alone for parameters no rank
used, as PyTorch does.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024
_DEFAULT_BUCKET_MB = 25


class _Bucket:
    def __init__(self, params, dtype):
        from ... import zeros

        self.params = params
        self.offsets, at = [], 0
        for p in params:
            self.offsets.append(at)
            at += p.numel()
        self.tensor = zeros(at, dtype=dtype)
        self.pending = len(params)
        self.work = None


def _walk_outputs(obj, out):
    """Collect the tensors of a (nested) forward output."""
    from ... import Tensor

    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _walk_outputs(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _walk_outputs(o, out)
    return out


def _reachable_leaves(outputs) -> set:
    """ids of the leaf tensors that the autograd graphs of ``outputs`` reach."""
    seen, found = set(), set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    found.update(id(t) for t in outputs if t.grad_fn is None and t.requires_grad)
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        var = getattr(fn, "variable", None)
        if var is not None:
            found.add(id(var))
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is not None:
                stack.append(nxt)
    return found


class DistributedDataParallel(Module):
    """Data parallelism across processes: each process runs ``module`` on its own part of
    the batch, and gradients are averaged over the process group during ``backward()``
    (see NOTE [ DDP buckets ]).

    Args:
        module: the module to replicate; its parameters and buffers are broadcast from
            rank 0 at construction.
        device_ids: None for CPU modules (the only kind ember's backend runs).
        output_device, dim: accepted for compatibility.
        broadcast_buffers: broadcast rank 0's buffers at the start of every forward.
        init_sync: broadcast parameters and buffers at construction.
        process_group: the group to average over (default: the default group).
        bucket_cap_mb: bucket size in MiB (default 25).
        find_unused_parameters: handle parameters the forward did not use.
        check_reduction, gradient_as_bucket_view, static_graph: accepted for compatibility.

    Raises:
        ValueError: no process group has been initialized.

    Example::

        >>> net = ember.nn.Linear(2, 1)
        >>> ddp = ember.nn.parallel.DistributedDataParallel(net)  # doctest: +SKIP
        >>> ddp(ember.ones(4, 2)).sum().backward()  # doctest: +SKIP
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False):
        super().__init__()
        from ... import distributed as dist

        if process_group is None and not dist.is_initialized():
            raise ValueError(dist.NOT_INITIALIZED)
        params = [p for p in module.parameters()]
        if not any(p.requires_grad for p in params):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        self.module = module
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((_DEFAULT_BUCKET_MB if bucket_cap_mb is None
                                     else bucket_cap_mb) * 1024 * 1024)
        self._world_size = dist.get_world_size(self.process_group)
        if init_sync:
            self._sync_module_states(with_params=True)
        self._build_buckets([p for p in params if p.requires_grad])
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready)
                       for b in self._buckets for p in b.params]
        self._reset_iteration()

    # -- setup ----------------------------------------------------------------------------------

    def _sync_module_states(self, with_params):
        from ... import distributed as dist, no_grad

        tensors = ([p for p in self.module.parameters()] if with_params else []) + \
            [b for b in self.module.buffers()]
        if self._world_size == 1 or not tensors:
            return
        with no_grad():
            by_dtype = {}
            for t in tensors:
                by_dtype.setdefault(t.dtype, []).append(t)
            for group in by_dtype.values():
                from ... import cat

                flat = cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, src=dist.get_global_rank(self.process_group, 0),
                               group=self.process_group)
                at = 0
                for t in group:
                    n = t.numel()
                    np.copyto(t._data, flat._data[at:at + n].reshape(t._data.shape))
                    t._bump()
                    at += n

    def _build_buckets(self, params):
        self._buckets, current, size, dtype = [], [], 0, None
        cap = _FIRST_BUCKET_BYTES
        for p in reversed(params):
            nbytes = p.numel() * p.element_size()
            if current and (p.dtype != dtype or size + nbytes > cap):
                self._buckets.append(_Bucket(current, dtype))
                current, size, cap = [], 0, self.bucket_bytes_cap
            current.append(p)
            size += nbytes
            dtype = p.dtype
        if current:
            self._buckets.append(_Bucket(current, dtype))
        self._where = {id(p): (i, j) for i, b in enumerate(self._buckets)
                       for j, p in enumerate(b.params)}
        self._num_params = sum(len(b.params) for b in self._buckets)

    def _reset_iteration(self):
        for b in self._buckets:
            b.pending, b.work = len(b.params), None
        self._next_bucket = 0
        self._used = np.ones(self._num_params, np.int32)
        self._seen = set()
        self._in_progress = False

    # -- forward --------------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module (after broadcasting rank 0's buffers if asked).

        Returns:
            the module's output.
        """
        from ... import is_grad_enabled

        if self._in_progress:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all "
                "`forward` function outputs participate in calculating loss.")
        if self.broadcast_buffers and self.require_forward_param_sync:
            self._sync_module_states(with_params=False)
        out = self.module(*inputs, **kwargs)
        self._reset_iteration()
        if self.find_unused_parameters and is_grad_enabled() and self.require_backward_grad_sync:
            reached = _reachable_leaves(_walk_outputs(out, []))
            for b in self._buckets:
                for p in b.params:
                    if id(p) not in reached:
                        self._mark_ready(p, None)
        return out

    # -- backward -------------------------------------------------------------------------------

    def _grad_ready(self, p):
        if not self.require_backward_grad_sync or id(p) in self._seen:
            return
        self._mark_ready(p, p.grad)

    def _mark_ready(self, p, grad):
        i, j = self._where[id(p)]
        b = self._buckets[i]
        self._seen.add(id(p))
        self._in_progress = True
        n = p.numel()
        dst = b.tensor._data[b.offsets[j]:b.offsets[j] + n]
        if grad is None:
            dst[...] = 0
            self._used[self._flat_index(i, j)] = 0
        else:
            np.divide(grad._data.reshape(-1), self._world_size, out=dst, casting="unsafe")
        b.pending -= 1
        for prev in self._buckets[:self._next_bucket]:  # let MPI progress earlier buckets
            if prev.work is not None:
                prev.work.is_completed()
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].pending == 0:
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _flat_index(self, i, j):
        return sum(len(b.params) for b in self._buckets[:i]) + j

    def _launch(self, bucket):
        from ... import distributed as dist

        bucket.work = dist.all_reduce(bucket.tensor, group=self.process_group, async_op=True)

    def _finalize(self):
        from ... import distributed as dist, from_numpy

        for b in self._buckets:
            b.work.wait()
        globally_used = None
        if self.find_unused_parameters:
            used = from_numpy(self._used.copy())
            dist.all_reduce(used, group=self.process_group)
            globally_used = used._data
        k = 0
        for b in self._buckets:
            for j, p in enumerate(b.params):
                if globally_used is not None and globally_used[k] == 0:
                    k += 1
                    continue
                k += 1
                n = p.numel()
                avg = b.tensor._data[b.offsets[j]:b.offsets[j] + n].reshape(p._data.shape)
                g = p.grad
                if g is not None and g._data.flags.writeable and g._data.flags.c_contiguous \
                        and g._data.base is None:
                    np.copyto(g._data, avg)
                    g._bump()
                else:
                    p.grad = from_numpy(avg.copy())
        self._in_progress = False

    # -- user controls --------------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context, backward accumulates gradients locally without averaging
        them; the first backward after it averages the accumulated gradients.

        Example::

            >>> with ddp.no_sync():  # doctest: +SKIP
            ...     ddp(x).sum().backward()
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def extra_repr(self) -> str:
        return ""

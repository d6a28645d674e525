"""``DistributedDataParallel``: one process per replica, gradients averaged between them.

NOTE [ DDP buckets ]
The parameters that need gradients are grouped into buckets of one dtype, each owning one
flat buffer. As in PyTorch 2.13, the first iteration runs with one bucket (per dtype);
after it the buckets are rebuilt in the order the gradients actually became ready (rank
0's order, broadcast, so every rank agrees; with ``static_graph``, the order of the second
iteration, the first having found the unused parameters, which come last in registration
order; so buckets change one iteration later there, as in PyTorch): the first holds up to
1 MiB
(``dist._DEFAULT_FIRST_BUCKET_BYTES``, when ``bucket_cap_mb`` is not given), the others up
to ``bucket_cap_mb`` (25 MB by default; ``bucket_cap_mb_list`` gives one cap per bucket).
With ``find_unused_parameters`` (and not ``static_graph``) that order may change between
iterations, so the buckets are made at once, in reverse registration order, and kept.

A post-accumulate-grad hook on every parameter copies its fresh ``.grad`` into the
bucket; when a bucket's last gradient arrives, its reduction starts asynchronously, so
communication overlaps the rest of backward (from the second iteration on): MPI's
progress thread moves the data while backward's kernels run (NOTE [ MPI progress thread ]
in ``ember/distributed/_progress.py``), and a profile shows each all-reduce as a
``gloo:all_reduce`` event on a row of its own, as PyTorch's gloo threads do. Without a
communication hook the copy divides by the world size and the reduction is one
all-reduce (SUM); with one (``register_comm_hook``) the bucket holds the raw gradients
and the hook's Future supplies the result (the hook runs on the backward thread, its
Futures' callbacks on the progress thread: NOTE [ Hook futures on the progress thread ]).
Buckets are launched strictly in index order (a bucket that fills early waits for its
predecessors) because every rank must issue the collectives in the same order. When the
last bucket has been launched, the hook that launched it waits for all of them and writes
the averaged gradients back into ``.grad``, so ``backward()`` returns with synchronized
gradients.

With ``gradient_as_bucket_view=True`` each ``.grad`` *is* a view of its bucket: backward
accumulates into the bucket directly and nothing is copied back.

With ``find_unused_parameters=True`` the forward walks the autograd graph of its output;
parameters it does not reach are counted as ready at once (zeros in the bucket), and a
small all-reduce of "used" flags at the end leaves ``.grad`` alone for parameters no rank
used, as PyTorch does. ``static_graph=True`` does that walk and that all-reduce in the
first iteration only and reuses the answer afterwards.

Uneven inputs: DDP is a ``Joinable``; see NOTE [ Join protocol ] in
``ember/distributed/algorithms/join.py`` for what a joined rank shadows.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from ...distributed import _progress
from ...distributed._collectives import _all_reduce, _check_collective
from ...distributed._ddp_logging import DDPLogger
from ...distributed._group import _resolve
from ...distributed.algorithms.join import Join, JoinHook, Joinable
from ...profiler._recorder import begin_async
from ..modules.module import Module

__all__ = ["DistributedDataParallel", "DistributedDataParallelCPU"]

_DEFAULT_BUCKET_MB = 25

_STATIC_WITH_FIND_UNUSED = (
    "You passed find_unused_parameters=true to DistributedDataParallel, `_set_static_graph` "
    "will detect unused parameters automatically, so you do not need to set "
    "find_unused_parameters=true, just be sure these unused parameters will not change "
    "during training loop while calling `_set_static_graph`.")


class _Bucket:
    def __init__(self, index, params, dtype, as_view):
        from ... import zeros

        self.index = index
        self.params = params
        self.offsets, at = [], 0
        for p in params:
            self.offsets.append(at)
            at += p.numel()
        self.tensor = zeros(at, dtype=dtype)
        self.views = [self.tensor[o:o + p.numel()].view(p.shape)
                      for p, o in zip(params, self.offsets)] if as_view else None
        self.pending = len(params)
        self.work = None
        self.future = None

    def slot(self, j):
        o = self.offsets[j]
        return self.tensor._data[o:o + self.params[j].numel()]


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


class _DDPJoinHook(JoinHook):
    """What a rank that ran out of data does for DDP while others still train."""

    def __init__(self, ddp, divide_by_initial_world_size):
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self):
        self.ddp._shadow_iteration()

    def post_hook(self, is_last_joiner):
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across processes: each process runs ``module`` on its own part of
    the batch, and gradients are averaged over the process group during ``backward()``
    (see NOTE [ DDP buckets ]).

    Args:
        module: the module to replicate; its parameters and buffers are broadcast from
            rank 0 at construction.
        device_ids: None for CPU modules.
        output_device, dim: accepted for compatibility.
        broadcast_buffers: broadcast rank 0's buffers at construction and at the start of
            every forward (deprecated in torch 2.13: FutureWarning; default True).
        init_sync: broadcast parameters and buffers at construction.
        process_group: the group to average over (default: the default group).
        bucket_cap_mb: bucket size in MiB (default 25).
        bucket_cap_mb_list: one size in MiB per bucket (the last one repeats).
        find_unused_parameters: handle parameters the forward did not use.
        check_reduction: accepted for compatibility.
        gradient_as_bucket_view: make every ``.grad`` a view of its bucket (saves one copy
            and the memory of the gradients).
        static_graph: the set of used parameters is the same every iteration.
        forward_sync_buffers: the new name of ``broadcast_buffers`` (buffers are then
            always broadcast at construction).
        delay_all_reduce_named_params, param_to_hook_all_reduce, mixed_precision: accepted
            for compatibility.
        device_mesh, skip_all_reduce_unused_params, batched_grad_copy: accepted for
            compatibility.

    Raises:
        ValueError: no process group has been initialized.

    Example::

        >>> net = ember.nn.Linear(2, 1)
        >>> ddp = ember.nn.parallel.DistributedDataParallel(net)  # doctest: +SKIP
        >>> ddp(ember.ones(4, 2)).sum().backward()  # doctest: +SKIP
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        Module.__init__(self)
        Joinable.__init__(self)
        from ... import distributed as dist

        if process_group is None and not dist.is_initialized():
            raise ValueError(dist.NOT_INITIALIZED)
        # names set by _set_params_and_buffers_to_ignore_for_model: neither synchronized
        # nor reduced, each rank keeps its own
        self.parameters_to_ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore",
                                                ()))
        params = [p for n, p in module.named_parameters() if n not in self.parameters_to_ignore]
        self._module_params = params
        self._module_buffers = [b for n, b in module.named_buffers()
                                if n not in self.parameters_to_ignore]
        if not any(p.requires_grad for p in params):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't "
                               "have any parameter that requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        devices = {p.device for p in params if p.device.type != "meta"}
        if (device_ids or output_device) and (not device_ids or len(devices) != 1
                                              or next(iter(devices)).type == "cpu"):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                "single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters "
                f"{devices}.")
        if not devices or next(iter(devices)).type == "cpu":
            from ..modules.normalization import SyncBatchNorm

            if any(isinstance(m, SyncBatchNorm) for m in module.modules()):
                raise ValueError("SyncBatchNorm layers only work with GPU modules")
        self.module = module
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        if broadcast_buffers is not None:
            warnings.warn(
                "Both `broadcast_buffers` and `forward_sync_buffers` were specified. "
                "`broadcast_buffers` is deprecated and its value is ignored when "
                "`forward_sync_buffers` is provided." if forward_sync_buffers is not None else
                "`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. "
                "IMPORTANT: unlike `broadcast_buffers=False`, `forward_sync_buffers=False` "
                "still syncs buffers at init. If you rely on buffers NOT being synced at "
                "init (e.g. rank-local buffers), keep using `broadcast_buffers=False` until "
                "`init_sync_buffers` is available.", FutureWarning, stacklevel=2)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers, init_buffers = forward_sync_buffers, True
        else:
            self.forward_sync_buffers = init_buffers = \
                True if broadcast_buffers is None else broadcast_buffers
        self.batched_grad_copy = batched_grad_copy
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        if bucket_cap_mb_list:
            self._bucket_caps = [int(mb * 1024 * 1024) for mb in bucket_cap_mb_list]
            self.bucket_bytes_cap = max(self._bucket_caps)
        else:
            self.bucket_bytes_cap = int((_DEFAULT_BUCKET_MB if bucket_cap_mb is None
                                         else bucket_cap_mb) * 1024 * 1024)
            first = dist._DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else \
                self.bucket_bytes_cap
            self._bucket_caps = [first, self.bucket_bytes_cap] if first < self.bucket_bytes_cap \
                else [self.bucket_bytes_cap]
        self._world_size = dist.get_world_size(self.process_group)
        self._rank = dist.get_rank(self.process_group)
        self._comm_hook = None
        self._comm_hook_state = None
        self._divide_by_initial_world_size = True
        self._join_work = None
        self._iterations = 0
        self._ready_order = []
        self._rebuilt = False
        self._has_rebuilt_buckets = False  # as torch's attribute (ddp_zero_hook reads it)
        self._static_unused = None  # static_graph: flat indices of globally unused params
        if self._world_size > 1:  # every rank must hold the same parameters
            _check_collective(_resolve(self.process_group), "DDP parameters",
                              [p for p in params])
        if init_sync:
            self._sync_module_states(with_params=True, buffers=init_buffers)
        self._params = [p for p in params if p.requires_grad]
        self._index_of = {id(p): k for k, p in enumerate(self._params)}
        # as torch 2.13: one bucket (per dtype) until the first iteration shows the order
        # gradients arrive in, except with find_unused_parameters (never rebuilt)
        one_bucket = not bucket_cap_mb_list and (static_graph or not find_unused_parameters)
        self._rebuilt = find_unused_parameters and not static_graph
        self._build_buckets(list(range(len(self._params))),
                            None if one_bucket else self._bucket_caps, reverse=True)
        self._hooks = [p.register_post_accumulate_grad_hook(self._grad_ready)
                       for p in self._params]
        self._reset_iteration()
        self._logger = DDPLogger(self)
        if static_graph and find_unused_parameters:
            warnings.warn(_STATIC_WITH_FIND_UNUSED, stacklevel=2)

    # -- setup ----------------------------------------------------------------------------------

    def _sync_module_states(self, with_params, src=None, buffers=True):
        from ... import cat, distributed as dist, no_grad

        tensors = (list(self._module_params) if with_params else []) + \
            (list(self._module_buffers) if buffers else [])
        if self._world_size == 1 or not tensors:
            return
        root = dist.get_global_rank(self.process_group, 0 if src is None else src)
        with no_grad():
            by_dtype = {}
            for t in tensors:
                by_dtype.setdefault(t.dtype, []).append(t)
            for group in by_dtype.values():
                flat = cat([t.detach().reshape(-1) for t in group])
                dist.broadcast(flat, src=root, group=self.process_group)
                at = 0
                for t in group:
                    n = t.numel()
                    np.copyto(t._data, flat._data[at:at + n].reshape(t._data.shape))
                    t._bump()
                    at += n

    def _build_buckets(self, order, caps, reverse=False):
        """Buckets over the parameters with indices ``order``, as PyTorch's reducer
        assigns them: one open bucket per dtype takes parameters in that order and closes
        once it holds at least its cap (``caps[i]`` for a dtype's i-th bucket, the last cap
        repeating; None: no limit); the buckets are ordered by where their first parameter
        comes in ``order``, then reversed if ``reverse`` (the initial buckets, made in
        registration order, reduce last-registered first)."""
        as_view = self.gradient_as_bucket_view
        groups, open_ = [], {}  # open_: dtype -> [indices, bytes, how many closed]
        for k in order:
            p = self._params[k]
            acc = open_.setdefault(p.dtype, [[], 0, 0])
            acc[0].append(k)
            acc[1] += p.numel() * p.element_size()
            if caps is not None and acc[1] >= caps[min(acc[2], len(caps) - 1)]:
                groups.append(acc[0])
                open_[p.dtype] = [[], 0, acc[2] + 1]
        groups += [acc[0] for acc in open_.values() if acc[0]]
        position = {k: i for i, k in enumerate(order)}
        groups.sort(key=lambda g: position[g[0]], reverse=reverse)
        buckets = [_Bucket(i, [self._params[k] for k in g], self._params[g[0]].dtype, as_view)
                   for i, g in enumerate(groups)]
        self._buckets = buckets
        self._where = {}
        flat = 0
        for i, b in enumerate(buckets):
            for j, p in enumerate(b.params):
                self._where[id(p)] = (i, j, flat)
                flat += 1
        self._num_params = flat
        if as_view:  # existing gradients move into the new buckets
            for b in buckets:
                for p, v in zip(b.params, b.views):
                    if p.grad is not None:
                        v._data[...] = p.grad._data
                        p.grad = v

    def _reset_iteration(self):
        for b in self._buckets:
            b.pending, b.work, b.future = len(b.params), None, None
        self._next_bucket = 0
        self._iter_order = []  # indices of the gradients that arrived, in order (logging)
        self._used = np.ones(self._num_params, np.int32)
        self._seen = set()
        self._in_progress = False
        self._divisor = None

    def _maybe_rebuild_buckets(self):
        """Rebuild the buckets in the order gradients arrived in the first iteration
        (rank 0's order), collectively; see NOTE [ DDP buckets ]."""
        from ... import distributed as dist, tensor

        if self._rebuilt:
            return
        self._rebuilt = True
        n = len(self._params)
        order = self._ready_order
        if self.static_graph:  # the unused parameters were never ready: they come last
            seen = set(order)
            order = order + [k for k in range(n) if k not in seen]
        order = order if len(order) == n else []
        if self._world_size > 1:
            # the root is the highest rank that has an order (a rank that joined without
            # data has none)
            root = tensor([self._rank if order else -1])
            dist.all_reduce(root, op=dist.ReduceOp.MAX, group=self.process_group)
            root = int(root.item())
            if root < 0:
                return
            buf = tensor(order if self._rank == root else [0] * n, dtype=None)
            dist.broadcast(buf, src=dist.get_global_rank(self.process_group, root),
                           group=self.process_group)
            order = [int(k) for k in buf.tolist()]
        if order and sorted(order) == list(range(n)):
            self._build_buckets(order, self._bucket_caps)
            self._reset_iteration()
            self._logger.rebuilt(self._iterations)  # shown from the next forward with grad

    def _rebuild_due(self) -> bool:
        """Whether the iteration that just ended recorded the order to rebuild by: the
        first, or with ``static_graph`` the second (the first only finds unused ones)."""
        return not self._rebuilt and self._iterations >= (2 if self.static_graph else 1)

    # -- forward --------------------------------------------------------------------------------

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module (after broadcasting rank 0's buffers if asked).

        Returns:
            the module's output.
        """
        from ... import distributed as dist, is_grad_enabled, tensor

        if self._in_progress:
            missing = " ".join(str(k) for k, p in enumerate(self._params)
                               if id(p) not in self._seen)
            raise self._logger.error(RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all "
                "`forward` function outputs participate in calculating loss. \nIf you already "
                "have done the above, then the distributed data parallel module wasn't able to "
                "locate the output tensors in the return value of your module's `forward` "
                "function. Please include the loss function and the structure of the return "
                "value of `forward` of your module when reporting this issue (e.g. list, dict, "
                "iterable).\nParameter indices which did not receive grad for rank "
                f"{self._rank}: {missing}\n In addition, you can set the environment variable "
                "TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to print out information "
                "about which particular parameters did not receive gradient on this rank as "
                "part of this error"))
        joining = self._join_config.enable
        if joining:
            self._join_work = Join.notify_join_context(self)
            flag = tensor([1.0 if self.require_backward_grad_sync else 0.0])
            dist.all_reduce(flag, group=self.process_group)
        syncing = is_grad_enabled() and self.require_backward_grad_sync
        if syncing:
            self._logger.forward_start(self)
        if is_grad_enabled():  # where PyTorch rebuilds (NOTE [ DDP logging data ])
            if self._logger.forward_seen():
                self._has_rebuilt_buckets = True
        if self.forward_sync_buffers and self.require_forward_param_sync:
            self._sync_buffers(joined=False)
        out = self.module(*inputs, **kwargs)
        # as PyTorch: a forward that will not synchronize gradients (no_sync, no grad)
        # also skips the next forward's buffer broadcast
        self.require_forward_param_sync = bool(is_grad_enabled()
                                               and self.require_backward_grad_sync)
        self._reset_iteration()
        if syncing:
            self._logger.forward_end()
            if self.static_graph and self._static_unused is not None:
                for k in self._static_unused:
                    self._mark_ready(self._param_at_flat(k), None)
            elif self.find_unused_parameters or self.static_graph:
                reached = _reachable_leaves(_walk_outputs(out, []))
                for p in self._params:
                    if id(p) not in reached:
                        self._mark_ready(p, None)
        return out

    def _prepare_for_backward(self, outputs) -> None:
        """Arm the reducer for a backward whose forward ran under ``no_sync``: a pipeline
        stage's last microbatch (NOTE [ Pipeline stages with data parallelism ] in
        distributed/pipelining/stage.py), as PyTorch's ``reducer.prepare_for_backward``.

        Args:
            outputs: the tensors the backward starts from (parameters they do not reach
                count as unused when ``find_unused_parameters`` is on).
        """
        self.require_backward_grad_sync = True
        self._reset_iteration()
        if self.find_unused_parameters or self.static_graph:
            reached = _reachable_leaves(_walk_outputs(outputs, []))
            for p in self._params:
                if id(p) not in reached:
                    self._mark_ready(p, None)

    def _sync_buffers(self, joined):
        """Broadcast the module's buffers; under ``Join`` from the highest training rank."""
        from ... import distributed as dist, tensor

        if self._world_size == 1 or not self._module_buffers:
            return
        if self._join_config.enable:
            root = tensor([-1 if joined else self._rank])
            dist.all_reduce(root, op=dist.ReduceOp.MAX, group=self.process_group)
            self._sync_module_states(with_params=False, src=int(root.item()))
        else:
            self._sync_module_states(with_params=False)

    def _param_at_flat(self, k):
        for b in self._buckets:
            if k < len(b.params):
                return b.params[k]
            k -= len(b.params)
        raise IndexError(k)

    # -- backward -------------------------------------------------------------------------------

    def _grad_ready(self, p):
        if not self.require_backward_grad_sync or id(p) in self._seen:
            return
        self._mark_ready(p, p.grad)

    def _current_divisor(self):
        if self._divisor is None:
            self._divisor = self._world_size
            if self._join_work is not None and not self._divide_by_initial_world_size:
                self._join_work.wait()
                self._divisor = max(int(self._join_work._count.item()), 1)
        return self._divisor

    def _mark_ready(self, p, grad):
        i, j, flat = self._where[id(p)]
        b = self._buckets[i]
        self._seen.add(id(p))
        if grad is not None:
            self._iter_order.append(self._index_of[id(p)])
            if not self._rebuilt and self._iterations == (1 if self.static_graph else 0):
                self._ready_order.append(self._index_of[id(p)])
        self._in_progress = True
        dst = b.slot(j)
        scale = self._comm_hook is None
        if grad is None:
            dst[...] = 0
            self._used[flat] = 0
        elif b.views is not None:
            view = b.views[j]
            if grad is not view:
                dst[...] = grad._data.reshape(-1)
                p.grad = view
            if scale:
                np.divide(dst, self._current_divisor(), out=dst, casting="unsafe")
        elif scale:
            np.divide(grad._data.reshape(-1), self._current_divisor(), out=dst, casting="unsafe")
        else:
            dst[...] = grad._data.reshape(-1)
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

    def _grad_bucket(self, b, buffer=None):
        from ...distributed import GradBucket

        return GradBucket(b.index, b.tensor if buffer is None else buffer, b.params, b.offsets,
                          b.index == len(self._buckets) - 1)

    def _launch(self, bucket):
        from ... import distributed as dist

        self._logger.comm_start()
        if self._comm_hook is not None:
            bucket.future = self._comm_hook(self._comm_hook_state, self._grad_bucket(bucket))
        else:
            # unchecked: the layouts were compared across ranks at construction
            event = begin_async("gloo:all_reduce")
            bucket.work = work = _all_reduce(bucket.tensor, dist.ReduceOp.SUM,
                                             self.process_group, True, False)
            driver = None if bucket.tensor.is_cuda else \
                _progress.driver_for(_resolve(self.process_group))
            if driver is not None:  # NOTE [ MPI progress thread ]
                driver.drive(work, event)
            elif work is not None:
                work._event = event

    def _finish_buckets(self):
        for b in self._buckets:
            if b.future is not None:
                value = b.future.wait()
                if isinstance(value, (list, tuple)):
                    value = value[0]
                if value is not b.tensor:
                    np.copyto(b.tensor._data, value._data.reshape(-1), casting="unsafe")
            elif b.work is not None:
                b.work.wait()

    def _finalize(self):
        from ... import distributed as dist, from_numpy

        self._logger.compute_end()
        try:
            self._finish_buckets()
        except BaseException:
            # as PyTorch's reducer: the iteration counts as finished before its buckets are
            # waited on, so an error from a hook's Future (a ``then`` callback that raised)
            # reaches backward() and the next forward starts normally
            self._in_progress = False
            self._iterations += 1
            raise
        self._logger.comm_end()
        self._log_iteration()
        globally_used = None
        if self.static_graph and self._static_unused is not None:
            globally_used = np.ones(self._num_params, np.int32)
            globally_used[list(self._static_unused)] = 0
        elif self.find_unused_parameters or self.static_graph:
            used = from_numpy(self._used.copy())
            dist.all_reduce(used, group=self.process_group)
            globally_used = used._data
            if self.static_graph:
                self._static_unused = [k for k in range(self._num_params)
                                       if globally_used[k] == 0]
        for b in self._buckets:
            for j, p in enumerate(b.params):
                if globally_used is not None and globally_used[self._where[id(p)][2]] == 0:
                    continue
                if b.views is not None:
                    if p.grad is not b.views[j]:
                        p.grad = b.views[j]
                    p.grad._bump()
                    continue
                avg = b.slot(j).reshape(p._data.shape)
                g = p.grad
                if g is not None and g._data.flags.writeable and g._data.flags.c_contiguous \
                        and g._data.base is None:
                    np.copyto(g._data, avg)
                    g._bump()
                else:
                    p.grad = from_numpy(avg.copy())
        self._in_progress = False
        self._iterations += 1
        if self._rebuild_due():
            self._rebuild_renumbering_unused()

    def _log_iteration(self):
        """What the logging record reports about this iteration (NOTE [ DDP logging data ])."""
        log = self._logger
        if self.static_graph and self._iterations == 0:
            log.buckets_reduced = 0  # as PyTorch's delayed first all-reduce counts
        else:
            log.buckets_reduced = len(self._buckets)
            log.ready_order = list(self._iter_order)
        if self.find_unused_parameters or self.static_graph:
            log.unused_bytes = sum(p.numel() * p.element_size() for b in self._buckets
                                   for p in b.params if self._used[self._where[id(p)][2]] == 0)

    def _rebuild_renumbering_unused(self):
        """Rebuild the buckets; static_graph's unused parameters keep their flat indices
        in step with the new buckets."""
        unused = None if self._static_unused is None else \
            [self._param_at_flat(k) for k in self._static_unused]
        self._maybe_rebuild_buckets()
        if unused is not None:
            self._static_unused = [self._where[id(p)][2] for p in unused]

    # -- joined ranks -----------------------------------------------------------------------------

    def _shadow_iteration(self):
        """One training iteration's collectives, with nothing to contribute (NOTE [ Join
        protocol ])."""
        from ... import distributed as dist, zeros

        flag = zeros(1)
        dist.all_reduce(flag, group=self.process_group)
        if self.forward_sync_buffers and self.require_forward_param_sync:
            self._sync_buffers(joined=True)
        if flag.item() == 0:
            return
        self._reset_iteration()
        for b in self._buckets:
            b.tensor._data[...] = 0
            self._launch(b)
        self._finish_buckets()
        if self.static_graph and self._static_unused is not None:
            pass
        elif self.find_unused_parameters or self.static_graph:
            used = zeros(self._num_params, dtype=self._int32())
            dist.all_reduce(used, group=self.process_group)
            if self.static_graph:
                self._static_unused = [k for k in range(self._num_params)
                                       if used._data[k] == 0]
        self._iterations += 1
        if self._rebuild_due():
            self._rebuild_renumbering_unused()

    @staticmethod
    def _int32():
        from ... import int32

        return int32

    def _sync_final_model(self, is_last_joiner):
        """Copy the parameters and buffers of the last rank to join onto every rank."""
        from ... import distributed as dist, tensor

        if self._world_size == 1:
            return
        root = tensor([self._rank if is_last_joiner else -1])
        dist.all_reduce(root, op=dist.ReduceOp.MAX, group=self.process_group)
        self._sync_module_states(with_params=True, src=int(root.item()))

    # -- user controls --------------------------------------------------------------------------

    def will_sync_module_buffers(self) -> bool:
        """Whether the next forward broadcasts the module's buffers from rank 0.

        Returns:
            bool: buffers are synchronized, forward synchronization is on, and the module
            has buffers.

        Example::

            >>> ddp.will_sync_module_buffers()  # doctest: +SKIP
            True
        """
        return bool(self.require_forward_param_sync and self.forward_sync_buffers
                    and self._module_buffers)

    def to_kwargs(self, inputs, kwargs, device_id):
        """The forward's inputs and keyword arguments moved to this replica's device, each
        wrapped in a one-element tuple (the form ``scatter`` gives for one device).

        Args:
            inputs (tuple): positional arguments.
            kwargs (dict): keyword arguments.
            device_id (int or None): the device index (None: the parameters' device).

        Returns:
            ((inputs,), (kwargs,))

        Example::

            >>> ddp.to_kwargs((x,), {}, None)  # doctest: +SKIP
            (((tensor(...),),), ({},))
        """
        from ... import Tensor, device as Device
        from ...utils._pytree import tree_map

        where = self._params[0].device
        if device_id is not None:
            where = Device(where.type, device_id) if where.type != "cpu" else where

        def move(x):
            return x.to(where) if isinstance(x, Tensor) else x

        return (tuple(tree_map(move, tuple(inputs))),), (tree_map(move, dict(kwargs or {})),)

    def scatter(self, inputs, kwargs, device_ids):
        """Split the forward's arguments over ``device_ids`` (``scatter_kwargs`` along
        ``self.dim``): tensors are chunked, one chunk per GPU; other values repeated.

        Args:
            inputs (tuple): positional arguments.
            kwargs (dict): keyword arguments.
            device_ids (list of int): the GPUs.

        Returns:
            (tuple of tuples, tuple of dicts): one pair per device.

        Raises:
            AssertionError: for tensor arguments when no CUDA device is there.

        Example::

            >>> ddp.scatter((3,), {"a": 1}, [0])  # doctest: +SKIP
            (((3,),), ({'a': 1},))
        """
        from .scatter_gather import scatter_kwargs

        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def gather(self, outputs, output_device):
        """Join per-device outputs on ``output_device`` along ``dim`` (multi-device
        replicas only: CPU tensors raise, as in PyTorch).

        Args:
            outputs: one output per device.
            output_device: where the result goes.

        Returns:
            The joined output.

        Raises:
            AssertionError: for CPU tensors.

        Example::

            >>> ddp.gather([out], 0)  # doctest: +SKIP
        """
        from .scatter_gather import gather

        return gather(outputs, output_device, dim=self.dim)

    @staticmethod
    def _set_params_and_buffers_to_ignore_for_model(module, params_and_buffers_to_ignore):
        """Name parameters and buffers of ``module`` that DDP (made after this call) leaves
        alone: not broadcast from rank 0, not reduced, not synchronized before forward.

        Args:
            module (Module): the module DDP will wrap.
            params_and_buffers_to_ignore (list of str): fully qualified names, as
                ``named_parameters()`` / ``named_buffers()`` give them.

        Example::

            >>> DDP._set_params_and_buffers_to_ignore_for_model(  # doctest: +SKIP
            ...     net, ["head.bias", "bn.running_mean"])
        """
        module._ddp_params_and_buffers_to_ignore = params_and_buffers_to_ignore
        for name, tensor in list(module.named_parameters()) + list(module.named_buffers()):
            if name in params_and_buffers_to_ignore:
                tensor._ddp_ignored = True

    def _set_static_graph(self) -> None:
        """Declare the graph static after construction, as ``static_graph=True`` does
        (before the first iteration). Warns when it was static already, and when
        ``find_unused_parameters`` was given (static graphs find unused ones themselves).

        Example::

            >>> ddp._set_static_graph()  # doctest: +SKIP
        """
        if self.static_graph:
            warnings.warn("You've set static_graph to be True, no need to set it again.",
                          stacklevel=2)
            return
        self.static_graph = True
        if self._iterations == 0:
            self._rebuilt = False  # find_unused_parameters' buckets are rebuilt after all
        self._logger.set_static_graph()
        if self.find_unused_parameters:
            warnings.warn(_STATIC_WITH_FIND_UNUSED, stacklevel=2)

    def _get_ddp_logging_data(self) -> dict:
        """The logging record (PyTorch's field names; NOTE [ DDP logging data ]).

        Returns:
            dict of str to str or int: the layout (``bucket_sizes``, ``dtypes``,
            ``static_graph``, ...) and, from the second iteration on, the previous
            iteration's buckets, unused parameter bytes and times in nanoseconds.

        Example::

            >>> ddp._get_ddp_logging_data()["bucket_cap_bytes"]  # doctest: +SKIP
            26214400
        """
        return self._logger.data()

    def _set_ddp_runtime_logging_sample_rate(self, sample_rate: int) -> None:
        """Refresh the runtime fields every ``sample_rate`` iterations after the first 10.

        Args:
            sample_rate (int): at least 1.

        Raises:
            ValueError: ``sample_rate`` is below 1.

        Example::

            >>> ddp._set_ddp_runtime_logging_sample_rate(10)  # doctest: +SKIP
        """
        if sample_rate < 1:
            raise ValueError("DDP runtime logging sample rate should be equal or greater "
                             "than 1")
        self._logger.sample_rate = int(sample_rate)

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

    def register_comm_hook(self, state, hook) -> None:
        """Let ``hook(state, bucket)`` reduce each gradient bucket instead of the built-in
        all-reduce. The bucket (a ``GradBucket``) holds the raw local gradients; the hook
        returns a ``Future`` whose value is the flat reduced (averaged) buffer.

        Args:
            state: passed to the hook unchanged (e.g. a process group or PowerSGDState).
            hook: ``(state, GradBucket) -> Future``; the standard ones are in
                ``ember.distributed.algorithms.ddp_comm_hooks``.

        The hook runs on the thread that runs backward; the ``then`` callbacks of the
        Futures of its collectives run on the progress thread (NOTE [ Hook futures on the
        progress thread ]).

        Raises:
            RuntimeError: a hook was already registered.
            TypeError: ``hook`` is not callable.
            KeyError: ``hook`` has no parameter named ``bucket`` (PyTorch reads its
                annotation by that name).
            ValueError: ``bucket`` or the return value is annotated with another type than
                ``GradBucket`` / ``Future[Tensor]``.

        Example::

            >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
            >>> ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)  # doctest: +SKIP
        """
        self._check_comm_hook(hook)
        if self._comm_hook is not None:
            raise self._logger.error(RuntimeError(
                "register_comm_hook or register_builtin_comm_hook can only be called once."))
        self._comm_hook, self._comm_hook_state = hook, state

    def _check_comm_hook(self, hook) -> None:
        """PyTorch's checks on a communication hook before it is registered (its
        signature's ``bucket`` parameter and annotations); the logging record keeps the
        error, with its class, as PyTorch's does."""
        import inspect

        from ... import Tensor, distributed as dist
        from ...futures import Future

        def refuse(err):
            return self._logger.error(err, with_class=True)

        if not callable(hook):
            raise refuse(TypeError("Communication hook must be callable."))
        sig = inspect.signature(hook)
        annotation = sig.parameters["bucket"].annotation  # KeyError, as PyTorch
        if annotation is not inspect.Parameter.empty and annotation is not dist.GradBucket:
            raise refuse(ValueError("Communication hook: bucket annotation should be "
                                    "dist.GradBucket."))
        ret = sig.return_annotation
        if ret is not inspect.Signature.empty and ret != Future[Tensor]:
            raise refuse(ValueError("Communication hook: return annotation should be "
                                    "torch.futures.Future[torch.Tensor]."))
        # (PyTorch also refuses the bf16 hooks unless built with CUDA and NCCL; ember runs
        # them on any device, so they stay accepted)

    def _register_builtin_comm_hook(self, comm_hook_type) -> None:
        """Register a built-in hook by ``dist.BuiltinCommHookType`` (ALLREDUCE, FP16_COMPRESS)."""
        from ...distributed.algorithms.ddp_comm_hooks import default_hooks

        hook = {"ALLREDUCE": default_hooks.allreduce_hook,
                "FP16_COMPRESS": default_hooks.fp16_compress_hook}[comm_hook_type.name]
        self.register_comm_hook(self.process_group, hook)

    # -- Join -----------------------------------------------------------------------------------

    def join(self, divide_by_initial_world_size=True, enable=True,
             throw_on_early_termination=False):
        """A ``Join`` context for training with a different number of batches per rank.

        Args:
            divide_by_initial_world_size: average over the initial world size (True) or
                over the ranks still training (False).
            enable: False makes the context a no-op.
            throw_on_early_termination: raise on every rank once one runs out of data.

        Returns:
            Join

        Example::

            >>> with ddp.join():  # doctest: +SKIP
            ...     for x in batches:
            ...         ddp(x).sum().backward()
        """
        return Join([self], enable, throw_on_early_termination,
                    divide_by_initial_world_size=divide_by_initial_world_size)

    def join_hook(self, **kwargs):
        """The hook a joined rank runs for this model (see ``join``).

        Args:
            divide_by_initial_world_size: as in ``join`` (default True).

        Returns:
            JoinHook
        """
        return _DDPJoinHook(self, kwargs.get("divide_by_initial_world_size", True))

    @property
    def join_device(self):
        """The device of the join collectives (the module's parameters' device)."""
        return self._params[0].device

    @property
    def join_process_group(self):
        """The process group of the join collectives."""
        return self.process_group

    @property
    def broadcast_buffers(self) -> bool:
        """Whether buffers are broadcast from rank 0 before every forward (the deprecated
        name of ``forward_sync_buffers``)."""
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value: bool) -> None:
        self.forward_sync_buffers = value

    def extra_repr(self) -> str:
        return ""


class DistributedDataParallelCPU(DistributedDataParallel):
    """The old name of ``DistributedDataParallel`` for CPU modules (deprecated: a
    FutureWarning).

    Args:
        *args: as for ``DistributedDataParallel``.
        **kwargs: as for ``DistributedDataParallel``.

    Example::

        >>> ember.nn.parallel.DistributedDataParallelCPU(net)  # doctest: +SKIP
    """

    def __init__(self, *args, **kwargs):
        warnings.warn("`torch.nn.parallel.DistributedDataParallelCPU` is deprecated, please "
                      "use `torch.nn.parallel.DistributedDataParallel` instead.",
                      FutureWarning, stacklevel=2)
        super().__init__(*args, **kwargs)

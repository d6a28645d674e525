"""What ``DistributedDataParallel._get_ddp_logging_data()`` reports: the model's layout at
construction, and each iteration's buckets, unused parameters and timings.

NOTE [ DDP logging data ]
PyTorch's DDP keeps one record of string and integer fields. The construction fields are
set once; the runtime fields describe the *previous* iteration and are refreshed at the
start of a forward that synchronizes (every one of the first 10 iterations, then every
``sample_rate``-th), before PyTorch would rebuild buckets in that forward. PyTorch
rebuilds in the first forward with gradients enabled after the backward that recorded the
order, a ``no_sync()`` forward included, and the next synchronizing forward's record shows
the rebuilt buckets. ember rebuilds at the end of that backward instead (NOTE [ DDP
buckets ]), so the record keeps the rebuild *pending* until a forward with gradients
enabled has started (``forward_seen``, after that forward's logging) and reports it from
the next logged forward on, as PyTorch does (under ``no_sync`` too: one step after the
rebuild, not two). Times are nanoseconds from
``time.time_ns()``: the forward's duration; backward compute from the end of the forward
to the last gradient; communication from the first bucket launched to the last reduced;
their overlap from the first launch to the last gradient; ``avg_*`` are means over the
logged iterations.
"""

from __future__ import annotations

import os
import time

#: PyTorch's default: after the first 10 iterations, runtime fields every 100th
_DEFAULT_SAMPLE_RATE = 100

_TIMES = ("forward_compute_time", "backward_compute_time", "backward_comm_time",
          "backward_compute_comm_overlap_time")


def _dtype_name(dtype) -> str:
    # torch's logger names dtypes as C++ scalar types ("float", "double", "c10::Half")
    return {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}.get(str(dtype).replace("ember.", ""),
                                                      str(dtype).replace("ember.", ""))


def _sizes(buckets) -> str:
    return ", ".join(str(sum(p.numel() * p.element_size() for p in b.params))
                     for b in buckets)


class DDPLogger:
    """The logging record of one ``DistributedDataParallel`` model.

    Args:
        ddp: the model (its parameters, buckets and options are read, never changed).

    Example::

        >>> logger = DDPLogger(ddp)  # doctest: +SKIP
        >>> logger.data()["bucket_cap_bytes"]  # doctest: +SKIP
        26214400
    """

    def __init__(self, ddp):
        from . import get_backend

        self.sample_rate = _DEFAULT_SAMPLE_RATE
        self._forwards = 0
        self._rebuild_pending = False  # rebuilt, and no forward with grad since
        self._rebuilt_visible = False  # a forward with grad followed the rebuild
        self._rebuilt_logged = False
        self._stamps = {}
        self._sums = dict.fromkeys(_TIMES, 0)
        self._logged = 0
        self.ready_order, self.buckets_reduced, self.unused_bytes = [], 0, 0
        env = os.environ.get
        params = ddp._params
        dtypes = []
        for p in params:
            if _dtype_name(p.dtype) not in dtypes:
                dtypes.append(_dtype_name(p.dtype))
        self._strs = {
            "backend_name": str(get_backend(ddp.process_group)),
            "bucket_sizes": _sizes(ddp._buckets),
            "cuda_visible_devices": env("CUDA_VISIBLE_DEVICES", "N/A"),
            "device_ids": "" if not ddp.device_ids else ", ".join(map(str, ddp.device_ids)),
            "dtypes": ", ".join(dtypes),
            "gloo_device_transport": env("GLOO_DEVICE_TRANSPORT", "N/A"),
            "gloo_socket_ifname": env("GLOO_SOCKET_IFNAME", "N/A"),
            "master_addr": env("MASTER_ADDR", "N/A"),
            "master_port": env("MASTER_PORT", "N/A"),
            "module_name": type(ddp.module).__name__,
            "torch_distributed_debug": env("TORCH_DISTRIBUTED_DEBUG", "N/A"),
        }
        has_sync_bn = any(type(m).__name__ == "SyncBatchNorm" for m in ddp.module.modules())
        self._ints = {
            "broadcast_buffers": int(bool(ddp.forward_sync_buffers)),
            "bucket_cap_bytes": ddp.bucket_bytes_cap,
            "find_unused_parameters": int(bool(ddp.find_unused_parameters)),
            "gloo_num_threads": 2,  # gloo's default pool; kept for scripts that log it
            "gradient_as_bucket_view": int(bool(ddp.gradient_as_bucket_view)),
            "has_sync_bn": int(has_sync_bn),
            "is_multi_device_module": 0,
            "iteration": 0,
            "num_parameter_tensors": len(params),
            "output_device": -1 if ddp.output_device is None else int(ddp.output_device),
            "rank": ddp._rank,
            "total_parameter_size_bytes": sum(p.numel() * p.element_size() for p in params),
            "world_size": ddp._world_size,
        }
        if ddp.static_graph:
            self._ints["static_graph"] = 1

    # -- events, called by DistributedDataParallel --------------------------------------------

    def forward_start(self, ddp) -> None:
        """A forward that will synchronize gradients begins: log the previous iteration."""
        iteration = self._forwards
        self._forwards += 1
        if iteration > 0 and (iteration < 10 or iteration % self.sample_rate == 0):
            self._log_runtime(ddp, iteration)
        self._stamps = {"forward_compute_time_start": time.time_ns()}

    def forward_end(self) -> None:
        """The forward returned: backward's compute starts now."""
        self._stamps["backward_compute_time_start"] = time.time_ns()

    def comm_start(self) -> None:
        """A bucket was launched (the first one starts the communication time)."""
        self._stamps.setdefault("backward_comm_time_start", time.time_ns())

    def compute_end(self) -> None:
        """The last gradient of the iteration is ready."""
        self._stamps["backward_compute_time_end"] = time.time_ns()

    def comm_end(self) -> None:
        """Every bucket was reduced."""
        self._stamps["backward_comm_time_end"] = time.time_ns()

    def set_static_graph(self) -> None:
        """The model was declared static after construction."""
        self._ints["static_graph"] = 1

    def rebuilt(self, iterations: int) -> None:
        """The buckets were rebuilt at the end of iteration ``iterations`` (the record shows
        it once a forward with gradients enabled has followed)."""
        self._rebuild_pending = True

    def forward_seen(self) -> bool:
        """A forward with gradients enabled started (after its logging): where PyTorch
        would have rebuilt the buckets. Whether it is the one that shows a rebuild."""
        if self._rebuild_pending:
            self._rebuild_pending, self._rebuilt_visible = False, True
            return True
        return False

    def error(self, err, with_class=False):
        """Record ``err`` in the record (``error``, ``has_error``) as PyTorch records the
        errors DDP raises through its logger; ``err``, to raise. ``with_class``: the text
        starts with the class, as PyTorch's Python-side checks write it."""
        self._strs["error"] = f"{type(err)}: {err}" if with_class else str(err)
        self._ints["has_error"] = 1
        return err

    # -- the record ---------------------------------------------------------------------------

    def _log_runtime(self, ddp, iteration):
        ints, strs = self._ints, self._strs
        ints["iteration"] = iteration
        has_rebuilt = self._rebuilt_visible
        ints["has_rebuilt_buckets"] = int(has_rebuilt)
        if has_rebuilt and not self._rebuilt_logged:
            self._rebuilt_logged = True
            strs["rebuilt_bucket_sizes"] = _sizes(ddp._buckets)
            strs["rebuilt_per_bucket_param_indices"] = ", ".join(
                " ".join(str(ddp._index_of[id(p)]) for p in b.params) for b in ddp._buckets)
        if self.ready_order:
            strs["prev_iteration_grad_ready_order_indices"] = ", ".join(
                map(str, self.ready_order))
        ints["num_buckets_reduced"] = self.buckets_reduced
        ints["unused_parameter_size"] = self.unused_bytes
        s = self._stamps
        if "backward_comm_time_end" not in s:  # no_sync or a forward without backward
            return
        fwd_start = s["forward_compute_time_start"]
        comp_start, comp_end = s["backward_compute_time_start"], s["backward_compute_time_end"]
        comm_start, comm_end = s.get("backward_comm_time_start", comp_end), \
            s["backward_comm_time_end"]
        times = {"forward_compute_time": comp_start - fwd_start,
                 "backward_compute_time": comp_end - comp_start,
                 "backward_comm_time": comm_end - comm_start,
                 "backward_compute_comm_overlap_time": max(comp_end - comm_start, 0)}
        self._logged += 1
        for k, v in times.items():
            ints[k] = v
            self._sums[k] += v
            ints["avg_" + k] = self._sums[k] // self._logged
        ints.update({"forward_compute_time_start": fwd_start,
                     "backward_compute_time_start": comp_start,
                     "backward_compute_time_end": comp_end,
                     "backward_comm_time_start": comm_start,
                     "backward_comm_time_end": comm_end})

    def data(self) -> dict:
        """The record: PyTorch's string fields and integer fields in one dict."""
        return {**self._strs, **self._ints}

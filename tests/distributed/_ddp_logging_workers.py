"""DDP's logging record, bucket layouts and static_graph's bucket rebuild, run inside
``_workers.ddp_features`` (the same code under PyTorch's gloo and under ember).

The nets have no biases, so the order gradients become ready is the same in both
frameworks (a Linear's weight and bias arrive in different orders in their engines).
"""

import importlib

from tests.distributed._workers import _feature_data

#: record fields that do not depend on timing
LAYOUT_FIELDS = (
    "backend_name", "bucket_cap_bytes", "bucket_sizes", "broadcast_buffers", "dtypes",
    "find_unused_parameters", "gradient_as_bucket_view", "has_rebuilt_buckets", "has_sync_bn",
    "iteration", "module_name", "num_buckets_reduced", "num_parameter_tensors",
    "prev_iteration_grad_ready_order_indices", "rebuilt_bucket_sizes",
    "rebuilt_per_bucket_param_indices", "static_graph", "total_parameter_size_bytes",
    "unused_parameter_size", "world_size", "rank", "output_device", "device_ids")


def _net(torch, unused):
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(6, 8, bias=False)
            self.head = torch.nn.Linear(8, 3, bias=False)
            self.never = torch.nn.Linear(3, 3, bias=False) if unused else None

        def forward(self, x):
            return self.head(torch.tanh(self.body(x)))

    return Net()


def _run(torch, rank, steps=4, unused=False, **kw):
    """Train ``steps`` iterations; the record after each forward, and the rebuilt flags."""
    ddp = torch.nn.parallel.DistributedDataParallel(_net(torch, unused), **kw)
    records, rebuilt = [], []
    for x, y in _feature_data(rank, steps):
        out = ddp(torch.from_numpy(x))
        rebuilt.append(bool(ddp._has_rebuilt_buckets))
        data = ddp._get_ddp_logging_data()
        records.append({k: data.get(k) for k in LAYOUT_FIELDS})
        ((out - torch.from_numpy(y)) ** 2).mean().backward()
    timings = {k: type(v).__name__ for k, v in ddp._get_ddp_logging_data().items()
               if "time" in k}
    return {"records": records, "rebuilt": rebuilt, "timings": timings}


def _bucket_params(torch, DDP, hooks, rank, **kw):
    """The parameter names of each bucket a comm hook sees, per iteration (a net with
    biases: the initial buckets do not depend on the ready order)."""
    from tests.distributed._workers import _feature_net

    net = _feature_net(torch)
    names = {id(p): n for n, p in net.named_parameters()}
    ddp = DDP(net, **kw)
    seen = []

    def hook(state, bucket):
        seen.append((bucket.index(), [names[id(p)] for p in bucket.parameters()]))
        return hooks.allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, hook)
    x, y = _feature_data(rank, 1)[0]
    ((ddp(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
    return seen


def _ignored(torch, DDP, rank):
    """A parameter and a buffer DDP ignores (rank-local values) while training the rest."""
    from tests.distributed._workers import _feature_net, _state, _train

    net = _feature_net(torch, bn=True)
    with torch.no_grad():  # rank-dependent values: DDP's broadcast must skip the ignored
        for p in net.parameters():
            p.add_(rank)
        net.bn.running_var.add_(rank)
    DDP._set_params_and_buffers_to_ignore_for_model(net, ["head.bias", "bn.running_var"])
    ddp = DDP(net)
    _train(torch, ddp, _feature_data(rank, 2))
    return _state(net), bool(getattr(net.head.bias, "_ddp_ignored", False)), \
        ddp.will_sync_module_buffers()


def _join_static(torch, DDP, rank):
    """static_graph under Join: the rank that runs out of data first still takes part in
    the bucket rebuild after the second iteration (it ends after 1, 2 and 4 batches)."""
    from tests.distributed._workers import _feature_net, _state, _train

    out = []
    for batches in (1 + 3 * rank, 2 + 2 * rank, 4 - 3 * rank):
        net = _feature_net(torch, unused=True)
        ddp = DDP(net, static_graph=True, bucket_cap_mb=0.0001)
        with ddp.join():
            _train(torch, ddp, _feature_data(rank, batches))
        out.append(_state(net))
    return out


def results(torch, dist, fw, rank):
    DDP = torch.nn.parallel.DistributedDataParallel
    hooks = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.default_hooks")
    res = {
        "log_plain": _run(torch, rank, bucket_cap_mb=0.00002),
        "log_static": _run(torch, rank, static_graph=True, bucket_cap_mb=0.00002),
        "log_static_unused": _run(torch, rank, unused=True, static_graph=True,
                                  bucket_cap_mb=0.00002),
        "log_find_unused": _run(torch, rank, steps=3, unused=True,
                                find_unused_parameters=True),
        "log_cap_list": _run(torch, rank, steps=3, bucket_cap_mb_list=[0.00002, 0.001]),
        "buckets_initial": _bucket_params(torch, DDP, hooks, rank),
        "buckets_find_unused": _bucket_params(torch, DDP, hooks, rank, bucket_cap_mb=0.0001,
                                              find_unused_parameters=True),
        "buckets_cap_list": _bucket_params(torch, DDP, hooks, rank,
                                           bucket_cap_mb_list=[0.00002, 0.0002]),
    }
    res["ignored"] = _ignored(torch, DDP, rank)
    res["join_static"] = _join_static(torch, DDP, rank)
    ddp = DDP(_net(torch, False))
    try:
        ddp._set_ddp_runtime_logging_sample_rate(0)
    except ValueError as e:
        res["log_bad_rate"] = str(e)
    return res

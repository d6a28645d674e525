"""ZeroRedundancyOptimizer(overlap_with_ddp=True), run inside ``_workers.ddp_features`` (2
processes). PyTorch refuses the overlap on gloo, so its results are the oracle computed
another way: the overlap updates nothing in the first two iterations (three with
``static_graph``, whose buckets are rebuilt one iteration later), so it must equal plain
DDP + Adam trained on the batches after those. ember runs the overlap on a group
with the "mpi" backend."""

import importlib

from tests.distributed._workers import _feature_data, _feature_net, _state


def _train(torch, ddp, opt, batches):
    for x, y in batches:
        if opt is not None:
            opt.zero_grad()
        ((ddp(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
        if opt is not None:
            opt.step()


def results(torch, dist, fw, rank):
    DDP = torch.nn.parallel.DistributedDataParallel
    optim = importlib.import_module(fw + ".distributed.optim")
    zh = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.ddp_zero_hook")
    default = importlib.import_module(fw + ".distributed.algorithms.ddp_comm_hooks.default_hooks")
    batches = _feature_data(rank, 5)
    res = {}
    # the oracle: plain DDP + Adam on the batches after the first two
    net = _feature_net(torch)
    ddp = DDP(net, bucket_cap_mb=0.0001)
    _train(torch, ddp, None, batches[:2])  # gradients only (same bucket rebuild)
    _train(torch, ddp, torch.optim.Adam(net.parameters(), lr=0.01), batches[2:])
    res["zo_expected"] = _state(net)
    # with static_graph DDP rebuilds its buckets one iteration later: three skipped
    net = _feature_net(torch)
    ddp = DDP(net, bucket_cap_mb=0.0001, static_graph=True)
    _train(torch, ddp, None, batches[:3])
    _train(torch, ddp, torch.optim.Adam(net.parameters(), lr=0.01), batches[3:])
    res["zo_expected_static"] = _state(net)
    # what the gloo backend answers
    net = _feature_net(torch)
    ddp = DDP(net)
    zero = optim.ZeroRedundancyOptimizer(net.parameters(), torch.optim.Adam,
                                         overlap_with_ddp=True, lr=0.01)
    try:
        zh.hook_with_zero_step(default.allreduce_hook, ddp, zero)
        res["zo_gloo"] = None
    except RuntimeError as e:
        res["zo_gloo"] = str(e)
    plain = optim.ZeroRedundancyOptimizer(net.parameters(), torch.optim.Adam, lr=0.01)
    try:
        zh.hook_with_zero_step(default.allreduce_hook, ddp, plain)
    except ValueError as e:
        res["zo_not_overlap"] = str(e)
    try:
        optim.ZeroRedundancyOptimizer(net.parameters(), torch.optim.LBFGS, overlap_with_ddp=True)
    except ValueError as e:
        res["zo_no_functional"] = str(e).replace(fw + ".", "torch.")
    res["zo_step_returns"] = zero.step()
    if fw == "ember":
        mpi = dist.new_group(backend="mpi")
        # caps (a bucket closes once it holds at least its cap, as torch's): 0.0001 MB,
        # three buckets (head's parameters, body's weight, body's bias); 0.00025 MB, two
        # (head's parameters and body's weight, then body's bias), split across the ranks
        # when sharding; None, one bucket (all on rank 0 without sharding)
        for name, wrap, shard, cap in [
                ("step", zh.hook_with_zero_step, False, 0.0001),
                ("step_shard", zh.hook_with_zero_step, True, 0.00025),
                ("interleaved", zh.hook_with_zero_step_interleaved, False, None),
                ("interleaved_shard", zh.hook_with_zero_step_interleaved, True, 0.0001)]:
            net = _feature_net(torch)
            ddp = DDP(net, bucket_cap_mb=cap, process_group=mpi)
            zero = optim.ZeroRedundancyOptimizer(net.parameters(), torch.optim.Adam,
                                                 overlap_with_ddp=True, lr=0.01)
            ddp.register_comm_hook(None, wrap(default.allreduce_hook, ddp, zero, shard))
            _train(torch, ddp, zero, batches)
            res["zo_" + name] = (_state(net), len(zero.optim.param_group["params"]))
        net = _feature_net(torch)
        ddp = DDP(net, bucket_cap_mb=0.0001, process_group=mpi, static_graph=True)
        zero = optim.ZeroRedundancyOptimizer(net.parameters(), torch.optim.Adam,
                                             overlap_with_ddp=True, lr=0.01)
        ddp.register_comm_hook(None, zh.hook_with_zero_step(default.allreduce_hook, ddp, zero))
        _train(torch, ddp, zero, batches)
        res["zo_step_static"] = _state(net)
    return res

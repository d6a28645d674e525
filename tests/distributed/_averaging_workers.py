"""Post-local SGD (hook, averagers, PostLocalSGDOptimizer) and hierarchical averaging on
a small net whose data differs per rank, run inside ``_workers.ddp_features`` (2
processes, under "torch" with gloo and under "ember"; no extra spawn). Results by name."""

import collections
import importlib
import warnings

from tests.distributed._workers import _feature_data, _feature_net, _state


def _step(torch, model, opt, x, y):
    opt.zero_grad()
    ((model(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
    opt.step()


def _raised(fn):
    """``(type name, message)`` of what ``fn()`` raises, or its warnings' messages."""
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        return [(m.category.__name__, str(m.message)) for m in w]
    except Exception as e:  # noqa: BLE001  (compared with torch's)
        return type(e).__name__, str(e)


def _bad_arguments(torch, averagers, hier, utils, hook_mod):
    odict = collections.OrderedDict
    cases = {
        "period_0": lambda: averagers.PeriodicModelAverager(0),
        "warmup_negative": lambda: averagers.PeriodicModelAverager(0, warmup_steps=-1),
        "period_1_warns": lambda: averagers.PeriodicModelAverager(1),
        "hier_empty": lambda: hier.HierarchicalModelAverager(odict()),
        "hier_period_0": lambda: hier.HierarchicalModelAverager(odict([(0, 2)])),
        "hier_last_size": lambda: hier.HierarchicalModelAverager(odict([(2, 1)])),
        "hier_warmup": lambda: hier.HierarchicalModelAverager(odict([(2, 2)]), warmup_steps=-1),
        "hier_period_1_warns": lambda: hier.HierarchicalModelAverager(odict([(1, 2)])),
        "params_not_parameter": lambda: utils.get_params_to_average([torch.ones(2)]),
        "params_empty": lambda: utils.average_parameters(iter([]), None),
        "state_slots": lambda: setattr(hook_mod.PostLocalSGDState(None, None, 1), "x", 1),
    }
    return {k: _raised(fn) for k, fn in cases.items()}


def results(torch, dist, fw, rank):
    """Every post-local SGD case on this rank (the group of 2 is initialized)."""
    DDP = torch.nn.parallel.DistributedDataParallel
    hook_mod = importlib.import_module(
        fw + ".distributed.algorithms.ddp_comm_hooks.post_localSGD_hook")
    averagers = importlib.import_module(
        fw + ".distributed.algorithms.model_averaging.averagers")
    hier = importlib.import_module(
        fw + ".distributed.algorithms.model_averaging.hierarchical_model_averager")
    utils = importlib.import_module(fw + ".distributed.algorithms.model_averaging.utils")
    optim = importlib.import_module(fw + ".distributed.optim")
    sub, _ = dist.new_subgroups(1)
    batches = _feature_data(rank, 5)
    res = {}

    # the hook with a per-rank subgroup (local gradients after iteration 2) or none at all
    for name, kw in [("hook_subgroup", {"subgroup": sub}),
                     ("hook_no_grad_allreduce", {"subgroup": None,
                                                 "post_local_gradient_allreduce": False})]:
        net = _feature_net(torch)
        ddp = DDP(net)
        state = hook_mod.PostLocalSGDState(process_group=None, start_localSGD_iter=2, **kw)
        ddp.register_comm_hook(state, hook_mod.post_localSGD_hook)
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        averager = averagers.PeriodicModelAverager(period=2, warmup_steps=2)
        steps = []
        for x, y in batches:
            _step(torch, ddp, opt, x, y)
            averager.average_parameters(net.parameters())
            steps.append(_state(net))
        res[name] = steps
        res[name + "_iter"] = (state.iter, averager.step)

    # PostLocalSGDOptimizer over parameter groups; a parameter without grad is left alone
    net = _feature_net(torch, unused=True)
    local = torch.optim.SGD([{"params": list(net.body.parameters())},
                             {"params": list(net.head.parameters()) +
                              list(net.never.parameters()), "lr": 0.05}], lr=0.1, momentum=0.5)
    with torch.no_grad():
        net.never.weight.add_(rank)
    opt = optim.PostLocalSGDOptimizer(local, averagers.PeriodicModelAverager(3, warmup_steps=1))
    steps = []
    for x, y in batches:
        _step(torch, net, opt, x, y)
        steps.append(_state(net))
    res["optimizer"] = steps
    sd = opt.state_dict()
    res["optimizer_sd"] = (sorted(sd), sd["step"], repr(opt) == repr(local),
                           opt.state is local.state, opt.param_groups is local.param_groups)
    sd.pop("step")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        opt.load_state_dict(sd)
    res["optimizer_load_no_step"] = (opt.averager.step, [str(m.message) for m in w])
    sd["step"] = 7
    opt.load_state_dict(sd)
    res["optimizer_load_step"] = opt.averager.step

    # hierarchy: every 2 steps within each rank (a no-op), every 3 steps across both
    net = _feature_net(torch)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    averager = hier.HierarchicalModelAverager(collections.OrderedDict([(2, 1), (3, 2)]),
                                              warmup_steps=1)
    steps = []
    for x, y in batches:
        _step(torch, net, opt, x, y)
        averager.average_parameters(opt.param_groups)
        steps.append(_state(net))
    res["hierarchical"] = steps
    res["hierarchical_periods"] = list(averager.period_process_group_dict)

    # no subgroup on a machine without CUDA: the default subgroups cannot be made
    net = _feature_net(torch)
    ddp = DDP(net)
    ddp.register_comm_hook(hook_mod.PostLocalSGDState(None, None, 1), hook_mod.post_localSGD_hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    try:
        for x, y in batches[:2]:
            _step(torch, ddp, opt, x, y)
        res["hook_default_subgroup"] = None
    except Exception as e:  # noqa: BLE001  (the type is compared with torch's)
        res["hook_default_subgroup"] = type(e).__name__
    res["bad_arguments"] = _bad_arguments(torch, averagers, hier, utils, hook_mod)
    return {"avg_" + k: v for k, v in res.items()}

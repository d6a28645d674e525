"""Workers for tests/distributed/test_dtensor.py: the same program run by ember and by
PyTorch on 2 ranks; each rank dumps what it saw (placements, shapes, values, gradients)."""

import datetime
import importlib
import os
import pickle

import numpy as np


def _np(t):
    return t.detach().float().numpy().copy()


def _dtype(t):
    return str(t.dtype).split(".")[-1]


def _pl(dt):
    return [repr(p) for p in dt.placements]


def _layouts(torch, dt_mod, mesh, rank, out):
    Shard, Replicate = dt_mod.Shard, dt_mod.Replicate
    a = torch.arange(15.0).reshape(5, 3)
    x = dt_mod.distribute_tensor(a, mesh, [Shard(0)])
    out["shard0"] = (list(x.shape), list(x.to_local().shape), _pl(x), _np(x.full_tensor()))
    out["shard_neg"] = _pl(dt_mod.distribute_tensor(a, mesh, [Shard(-1)]))
    s1 = x.redistribute(mesh, [Shard(1)])
    out["s0_to_s1"] = (list(s1.to_local().shape), _np(s1.to_local()), _pl(s1))
    r = x.redistribute(mesh, [Replicate()])
    out["s0_to_r"] = (_pl(r), _np(r.to_local()))
    back = r.redistribute(mesh, [Shard(0)])
    out["r_to_s0"] = _np(back.to_local())
    total = x.sum()
    out["sum"] = (_pl(total), float(total.full_tensor()))
    out["sum_dim1"] = (_pl(x.sum(1)), _np(x.sum(1).full_tensor()))
    even = dt_mod.distribute_tensor(torch.arange(24.0).reshape(4, 6), mesh, [Shard(0)])
    out["mean0"] = (_pl(even.mean(0)), _np(even.mean(0).full_tensor()))
    out["mean_uneven"] = _np(x.mean(0).full_tensor())
    out["amax"] = (_pl(even.amax(0)), _np(even.amax(0).full_tensor()))
    y = x * 2 + 1
    out["pointwise"] = (_pl(y), _np(y.to_local()))
    p2 = x.sum(0) * 3
    out["partial_scaled"] = (_pl(p2), _np(p2.full_tensor()))
    out["view"] = {
        "view": _pl(even.view(2, 2, 6)), "flatten": _pl(even.reshape(24)),
        "t": _pl(even.t()), "transpose": _pl(even.transpose(0, 1)),
        "unsqueeze": _pl(even.unsqueeze(0)), "view_split": _pl(even.view(4, 2, 3)),
        "permute": _pl(even.unsqueeze(2).permute(2, 1, 0))}
    out["view_values"] = _np(even.view(2, 2, 6).full_tensor())
    w = torch.arange(12.0).reshape(3, 4) / 10
    col = torch.matmul(dt_mod.distribute_tensor(a, mesh, [Replicate()]),
                       dt_mod.distribute_tensor(w, mesh, [Shard(1)]))
    out["mm_colwise"] = (_pl(col), _np(col.full_tensor()))
    row = torch.matmul(dt_mod.distribute_tensor(a, mesh, [Shard(1)]),
                       dt_mod.distribute_tensor(w, mesh, [Shard(0)]))
    out["mm_rowwise"] = (_pl(row), _np(row.full_tensor()))
    sm = torch.softmax(even, dim=1)
    out["softmax"] = (_pl(sm), _np(sm.full_tensor()))
    try:
        x + torch.ones(5, 3)
        out["mixed"] = None
    except RuntimeError as e:
        out["mixed"] = "got mixed torch.Tensor and DTensor" in str(e)
    try:
        x.redistribute(mesh, [dt_mod.Partial()])
        out["to_partial"] = None
    except RuntimeError as e:
        out["to_partial"] = "redistributing to Partial is for internal use only" in str(e)
    z = dt_mod.zeros(5, 2, device_mesh=mesh, placements=[Shard(0)])
    out["zeros"] = (list(z.to_local().shape), _pl(z))
    sliced = x[:, 1:]
    out["getitem"] = (_pl(sliced), _np(sliced.full_tensor()), _np(x[1:4].full_tensor()))
    if torch.__name__ == "ember":  # PyTorch has no sharding rule for these (it raises)
        y = x.clone()
        y[1:4, 0] = 7.0
        z = y.clone()
        z.index_fill_(0, dt_mod.distribute_tensor(torch.tensor([0, 4]), mesh), -1.0)
        plain = a.clone()
        plain[1:4, 0] = 7.0
        out["setitem_sharded"] = (_pl(y), np.array_equal(_np(y.full_tensor()), _np(plain)),
                                  np.array_equal(_np(z.full_tensor()),
                                                 _np(plain.index_fill(0, torch.tensor([0, 4]),
                                                                      -1.0))))
    mesh2 = dt_mod.init_device_mesh("cpu", (1, 2), mesh_dim_names=("dp", "tp"))
    out["mesh_repr"] = (repr(mesh), repr(mesh2), repr(mesh2["tp"]))
    x2 = dt_mod.distribute_tensor(a, mesh2, [Replicate(), Shard(0)])
    y2 = (x2 * 2).redistribute(mesh2, [Shard(1), Shard(0)])
    t2 = y2.sum(0)
    out["mesh_2d"] = (list(x2.to_local().shape), _pl(y2), list(y2.to_local().shape), _pl(t2),
                      _np(t2.full_tensor()))


def _grads(torch, dt_mod, mesh, rank, out):
    Shard, Replicate = dt_mod.Shard, dt_mod.Replicate
    F = torch.nn.functional
    torch.manual_seed(0)
    a, w = torch.randn(5, 3), torch.randn(4, 3)
    xa, wa = a.clone().requires_grad_(), w.clone().requires_grad_()
    F.linear(xa, wa).tanh().sum().backward()
    x = dt_mod.distribute_tensor(a, mesh, [Replicate()]).detach().requires_grad_()
    wp = torch.nn.Parameter(dt_mod.distribute_tensor(w, mesh, [Shard(0)]))
    loss = F.linear(x, wp).tanh().sum()
    loss.full_tensor().backward()
    out["param"] = (type(wp).__name__, isinstance(wp, torch.nn.Parameter), wp.is_leaf)
    out["linear_grads"] = (_pl(wp.grad), _pl(x.grad),
                           np.allclose(_np(wp.grad.full_tensor()), _np(wa.grad), atol=1e-5),
                           np.allclose(_np(x.grad.full_tensor()), _np(xa.grad), atol=1e-5))
    local = (torch.arange(3.0) + 3 * rank).requires_grad_()
    d = dt_mod.DTensor.from_local(local, mesh, [Shard(0)])
    (d.full_tensor() ** 2).sum().backward()
    out["from_local"] = (list(d.shape), _np(local.grad))


def _tp(torch, dt_mod, tp, mesh, rank, out):
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    ref.load_state_dict(net.state_dict())
    tp.parallelize_module(net, mesh, {"0": tp.ColwiseParallel(), "2": tp.RowwiseParallel()})
    out["tp_layouts"] = [(n, _pl(p), list(p.to_local().shape)) for n, p in net.named_parameters()]
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    torch.manual_seed(2)
    for _ in range(3):
        x, y = torch.randn(6, 8), torch.randn(6, 4)
        for m, o in ((net, opt), (ref, ref_opt)):
            o.zero_grad()
            got = m(x)
            ((got - y) ** 2).mean().backward()
            o.step()
    out["tp_output_type"] = type(got).__name__
    out["tp_matches"] = all(
        np.allclose(_np(p.full_tensor()), _np(q), atol=1e-5)
        for p, q in zip(net.parameters(), ref.parameters()))
    sd = net.state_dict()
    out["tp_state_dict"] = [(k, type(v).__name__, _pl(v)) for k, v in sd.items()]
    torch.manual_seed(8)
    blocks = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(),
                                                       torch.nn.Linear(6, 4)) for _ in range(2)])
    whole = [p.detach().clone() for p in blocks.parameters()]
    x = torch.randn(3, 4)
    expected = blocks(x)
    tp.parallelize_module(blocks, mesh, {"*.0": tp.ColwiseParallel(), "*.2": tp.RowwiseParallel()})
    out["tp_wildcard"] = ([_pl(p) for p in blocks.parameters()],
                          np.allclose(_np(blocks(x)), _np(expected), atol=1e-5),
                          all(np.allclose(_np(p.full_tensor()), _np(w))
                              for p, w in zip(blocks.parameters(), whole)))
    lin = torch.nn.Linear(3, 2)
    w0 = lin.weight.detach().clone()

    def shard_weight(name, mod, mesh):
        if isinstance(mod, torch.nn.Linear):
            mod.register_parameter("weight", torch.nn.Parameter(
                dt_mod.distribute_tensor(mod.weight, mesh, [dt_mod.Shard(0)])))

    dt_mod.distribute_module(
        lin, mesh, shard_weight,
        input_fn=lambda mod, inputs, mesh: tuple(
            dt_mod.DTensor.from_local(i, mesh, [dt_mod.Replicate()]) for i in inputs),
        output_fn=lambda mod, outputs, mesh: outputs.full_tensor())
    got = lin(torch.ones(2, 3))
    out["distribute_module"] = (_pl(lin.weight), _pl(lin.bias), type(got).__name__,
                                np.allclose(_np(got), _np(torch.ones(2, 3) @ w0.T
                                                          + lin.bias.full_tensor()), atol=1e-6))
    norm = torch.nn.LayerNorm(8)
    ref_norm = torch.nn.LayerNorm(8)
    tp.parallelize_module(norm, mesh, tp.SequenceParallel())
    torch.manual_seed(3)
    x = torch.randn(2, 4, 8)
    piece = x[:, 2 * rank:2 * rank + 2].clone()
    got = norm(piece)
    out["sp_output"] = (type(got).__name__, _pl(got), list(got.shape))
    (got.full_tensor() * torch.arange(8.0)).sum().backward()
    (ref_norm(x) * torch.arange(8.0)).sum().backward()
    F = torch.nn.functional
    whole = torch.arange(24.0).reshape(4, 6).sin() * 3
    target = torch.tensor([0, 5, 2, 3])
    ref = whole.clone().requires_grad_()
    F.cross_entropy(ref, target).backward()
    logits = dt_mod.distribute_tensor(whole, mesh, [dt_mod.Shard(1)]).requires_grad_()
    with tp.loss_parallel():
        loss = F.cross_entropy(logits, target)
        loss.backward()
    out["loss_parallel"] = (_pl(loss), loss.full_tensor().item(), _pl(logits.grad),
                            np.allclose(_np(logits.grad.full_tensor()), _np(ref.grad), atol=1e-6))
    out["sp_grads"] = (_pl(norm.weight.grad),
                       np.allclose(_np(norm.weight.grad.full_tensor()), _np(ref_norm.weight.grad),
                                   atol=1e-5))


def _fsdp(torch, dt_mod, mesh, rank, out, path):
    fsdp = importlib.import_module(torch.__name__ + ".distributed.fsdp")
    dcp = importlib.import_module(torch.__name__ + ".distributed.checkpoint")
    torch.manual_seed(4)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2))
    for layer in net:
        fsdp.fully_shard(layer, mesh=mesh)
    fsdp.fully_shard(net, mesh=mesh)
    sd = net.state_dict()
    out["fsdp_state_dict"] = [(k, type(v).__name__, _pl(v), list(v.shape),
                               list(v.to_local().shape)) for k, v in sd.items()]
    net(torch.ones(4, 3)).sum().backward()
    out["fsdp_grad"] = [(_pl(p.grad), list(p.grad.to_local().shape)) for p in net.parameters()]
    full = {k: _np(v.full_tensor()) for k, v in sd.items()}
    dcp.save({"model": sd}, checkpoint_id=os.path.join(path, "fsdp"))
    torch.manual_seed(5)
    other = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2))
    for layer in other:
        fsdp.fully_shard(layer, mesh=mesh)
    fsdp.fully_shard(other, mesh=mesh)
    target = {"model": other.state_dict()}
    dcp.load(target, checkpoint_id=os.path.join(path, "fsdp"))
    out["fsdp_reload"] = all(np.array_equal(_np(v.full_tensor()), full[k])
                             for k, v in other.state_dict().items())
    out["fsdp_full"] = full
    mp = fsdp.MixedPrecisionPolicy(param_dtype=torch.bfloat16)
    torch.manual_seed(6)
    net = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2))
    for layer in net:
        fsdp.fully_shard(layer, mesh=mesh, mp_policy=mp)
    fsdp.fully_shard(net, mesh=mesh, mp_policy=mp)
    net[0].set_modules_to_forward_prefetch([net[1]])
    net[0].unshard()
    gathered = _dtype(net[0].weight)
    net[0].reshard()
    y = net(torch.ones(4, 3))
    y.float().sum().backward()
    out["fsdp_mixed"] = (gathered, _dtype(y), type(net[0].weight).__name__,
                         _dtype(net[0].weight), _dtype(net[0].weight.grad),
                         _pl(net[0].weight.grad))


def _serialization(torch, dt_mod, tp, fsdp, mesh, rank, out, out_dir):
    import copy
    import io

    Shard, Replicate, Partial = dt_mod.Shard, dt_mod.Replicate, dt_mod.Partial
    a = torch.arange(15.0).reshape(5, 3)

    def seen(d):
        return (type(d).__name__, _pl(d), _np(d.to_local()), list(d.shape), d.requires_grad,
                isinstance(d, torch.nn.Parameter), d.device_mesh == mesh)

    pieces = [dt_mod.distribute_tensor(a, mesh, [Shard(0)]),
              dt_mod.distribute_tensor(a, mesh, [Replicate()]),
              dt_mod.DTensor.from_local(a * (rank + 1), mesh, [Partial()]),
              dt_mod.distribute_tensor(a, mesh, [Shard(1)]).requires_grad_()]
    out["pickle_dtensor"] = [seen(pickle.loads(pickle.dumps(d))) for d in pieces]
    out["pickle_reduces"] = _np(pickle.loads(pickle.dumps(pieces[2])).full_tensor())

    lin = torch.nn.Linear(3, 4)
    with torch.no_grad():  # the same values in both frameworks
        lin.weight.copy_(torch.arange(12.0).reshape(4, 3) / 10 - 0.5)
        lin.bias.copy_(torch.arange(4.0) / 4)
    tp.parallelize_module(lin, mesh, tp.ColwiseParallel(use_local_output=False))
    out["pickle_param"] = seen(pickle.loads(pickle.dumps(lin.weight)))
    buf = io.BytesIO()
    torch.save(lin.state_dict(), buf)
    buf.seek(0)
    loaded = torch.load(buf)  # weights_only=True by default
    out["save_load"] = {k: seen(v) for k, v in loaded.items()}
    torch.save(lin.state_dict(), os.path.join(out_dir, f"tp_state{rank}.pt"))
    other = torch.nn.Linear(3, 4)
    tp.parallelize_module(other, mesh, tp.ColwiseParallel(use_local_output=False))
    other.load_state_dict(loaded)
    x = torch.ones(2, 3)
    out["save_load_forward"] = _np(other(x).full_tensor())

    twin = copy.deepcopy(lin)
    twin_out = twin(x)
    out["deepcopy_module"] = (seen(twin.weight), twin.weight is lin.weight,
                              _np(twin_out.full_tensor()), _np(lin(x).full_tensor()))
    twin_out.full_tensor().sum().backward()
    out["deepcopy_grads"] = (_pl(twin.weight.grad), lin.weight.grad is None)

    seq = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    fsdp.fully_shard(seq, mesh=mesh)
    try:
        copy.deepcopy(seq)
        out["deepcopy_fsdp"] = "copied"
    except Exception as e:
        out["deepcopy_fsdp"] = (type(e).__name__, str(e))


def run(rank, fw, init_method, out_dir):
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dt_mod = importlib.import_module(fw + ".distributed.tensor")
    tp = importlib.import_module(fw + ".distributed.tensor.parallel")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    mesh = dt_mod.init_device_mesh("cpu", (2,))
    out = {}
    _layouts(torch, dt_mod, mesh, rank, out)
    _grads(torch, dt_mod, mesh, rank, out)
    _tp(torch, dt_mod, tp, mesh, rank, out)
    _fsdp(torch, dt_mod, mesh, rank, out, out_dir)
    _serialization(torch, dt_mod, tp, importlib.import_module(fw + ".distributed.fsdp"), mesh,
                   rank, out, out_dir)
    from tests.distributed import _rules_workers

    out["rules"] = _rules_workers.cases(torch, dt_mod, mesh)
    out["partial_grads"] = _rules_workers.partial_grads(torch, dt_mod, tp, mesh, rank)
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(out, f)
    dist.destroy_process_group()

"""Workers for tests/distributed/test_dtensor_rules.py: the layouts DTensor ops give for
joins, norms and attention (and their inputs' gradients), the same program run by ember and
by PyTorch on 2 ranks."""

import datetime
import importlib
import os
import pickle

import numpy as np


def _np(t):
    return t.detach().float().numpy().copy()


def _pl(dt):
    return [repr(p) for p in dt.placements]


def _data(torch, *shape, seed=0):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal(shape)).float()


def _case(torch, dt_mod, mesh, fn, inputs):
    """``fn`` of DTensors made from ``inputs`` = [(whole tensor, placements)]: the result's
    placements and whole value, and each input's gradient placements and whole value."""
    dts = [dt_mod.distribute_tensor(t, mesh, pl).requires_grad_() for t, pl in inputs]
    out = fn(*dts)
    weights = _data(torch, *out.shape, seed=99)
    loss = (out * dt_mod.distribute_tensor(weights, mesh, out.placements
                                           if not any(p.is_partial() for p in out.placements)
                                           else [dt_mod.Replicate()])).sum()
    loss.full_tensor().backward() if hasattr(loss, "full_tensor") else loss.backward()
    return (_pl(out), _np(out.full_tensor()),
            [(_pl(d.grad), _np(d.grad.full_tensor())) for d in dts])


def cases(torch, dt_mod, mesh):
    F = torch.nn.functional
    S, R, P = dt_mod.Shard, dt_mod.Replicate, dt_mod.Partial
    a, b = _data(torch, 4, 6, seed=1), _data(torch, 4, 6, seed=2)
    x3 = _data(torch, 2, 4, 8, seed=3)
    w8, b8 = _data(torch, 8, seed=4), _data(torch, 8, seed=5)
    q, k, v = (_data(torch, 2, 4, 6, 8, seed=s) for s in (6, 7, 8))
    out = {
        "cat_s0_dim1": lambda: _case(torch, dt_mod, mesh, lambda x, y: torch.cat([x, y], 1),
                                     [(a, [S(0)]), (b, [S(0)])]),
        "cat_s0_dim0": lambda: _case(torch, dt_mod, mesh, lambda x, y: torch.cat([x, y], 0),
                                     [(a, [S(0)]), (b, [S(0)])]),
        "cat_s1_r": lambda: _case(torch, dt_mod, mesh, lambda x, y: torch.cat([x, y], 0),
                                  [(a, [S(1)]), (b, [R()])]),
        "stack_s0_dim0": lambda: _case(torch, dt_mod, mesh, lambda x, y: torch.stack([x, y]),
                                       [(a, [S(0)]), (b, [S(0)])]),
        "stack_s1_dim2": lambda: _case(torch, dt_mod, mesh,
                                       lambda x, y: torch.stack([x, y], 2),
                                       [(a, [S(1)]), (b, [S(1)])]),
        "layer_norm_s0": lambda: _case(torch, dt_mod, mesh,
                                       lambda x, w, c: F.layer_norm(x, (8,), w, c),
                                       [(x3, [S(0)]), (w8, [R()]), (b8, [R()])]),
        "layer_norm_s1": lambda: _case(torch, dt_mod, mesh,
                                       lambda x, w, c: F.layer_norm(x, (8,), w, c),
                                       [(x3, [S(1)]), (w8, [R()]), (b8, [R()])]),
        "layer_norm_s2": lambda: _case(torch, dt_mod, mesh,
                                       lambda x, w, c: F.layer_norm(x, (8,), w, c),
                                       [(x3, [S(2)]), (w8, [R()]), (b8, [R()])]),
        "rms_norm_s1": lambda: _case(torch, dt_mod, mesh,
                                     lambda x, w: F.rms_norm(x, (8,), w, 1e-6),
                                     [(x3, [S(1)]), (w8, [R()])]),
        "sdpa_heads": lambda: _case(torch, dt_mod, mesh, F.scaled_dot_product_attention,
                                    [(q, [S(1)]), (k, [S(1)]), (v, [S(1)])]),
        "sdpa_batch": lambda: _case(torch, dt_mod, mesh, F.scaled_dot_product_attention,
                                    [(q, [S(0)]), (k, [S(0)]), (v, [S(0)])]),
        "sdpa_causal_heads": lambda: _case(
            torch, dt_mod, mesh, lambda *t: F.scaled_dot_product_attention(*t, is_causal=True),
            [(q, [S(1)]), (k, [S(1)]), (v, [S(1)])]),
        "sdpa_replicated": lambda: _case(torch, dt_mod, mesh, F.scaled_dot_product_attention,
                                         [(q, [R()]), (k, [R()]), (v, [R()])]),
    }
    _ = P
    results = {}
    for name, fn in out.items():
        try:
            results[name] = fn()
        except Exception as e:  # noqa: BLE001  (what raises is compared too)
            results[name] = ("raises", type(e).__name__)
    return results


def partial_grads(torch, dt_mod, tp, mesh, rank):
    """Gradients of replicated leaves read where the result is sharded (kept unsummed, as
    PyTorch keeps them), read both ways (summed), and an optimizer and gradient clipping
    over them, against the same training in one process."""
    F = torch.nn.functional
    S, R = dt_mod.Shard, dt_mod.Replicate
    out = {}
    a, w = _data(torch, 5, 3, seed=20), _data(torch, 4, 3, seed=21)
    x = dt_mod.distribute_tensor(a, mesh, [R()]).requires_grad_()
    wp = torch.nn.Parameter(dt_mod.distribute_tensor(w, mesh, [S(0)]))
    F.linear(x, wp).tanh().sum().full_tensor().backward()
    out["linear_x_grad"] = (_pl(x.grad), _np(x.grad.full_tensor()))
    x2 = dt_mod.distribute_tensor(a, mesh, [R()]).requires_grad_()
    (F.linear(x2, wp).tanh().sum().full_tensor() + (x2 * 3).sum().full_tensor()).backward()
    out["mixed_x_grad"] = (_pl(x2.grad), _np(x2.grad.full_tensor()))
    norm = torch.nn.LayerNorm(8)
    _init_like(torch, norm)
    tp.parallelize_module(norm, mesh, tp.SequenceParallel())
    opt = torch.optim.Adam(norm.parameters(), lr=0.1)
    for step in range(2):
        xs = _data(torch, 2, 4, 8, seed=30 + step)
        piece = xs[:, 2 * rank:2 * rank + 2].clone()
        y = norm(piece)
        (y.full_tensor() * torch.arange(8.0)).sum().backward()
        if step == 0:
            out["sp_grad_layout"] = _pl(norm.weight.grad)
            total = torch.nn.utils.clip_grad_norm_(norm.parameters(), 1.0)
            out["clip_total"] = float(total.full_tensor() if hasattr(total, "full_tensor")
                                      else total)
        opt.step()
        opt.zero_grad()
    out["sp_trained"] = [_np(p.full_tensor()) for p in norm.parameters()]
    return out


def _init_like(torch, module):
    rng = np.random.default_rng(40)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape))).float())


def partial_grads_reference(torch):
    """``partial_grads`` in one process, without DTensors."""
    F = torch.nn.functional
    out = {}
    a, w = _data(torch, 5, 3, seed=20), _data(torch, 4, 3, seed=21)
    x = a.clone().requires_grad_()
    F.linear(x, w).tanh().sum().backward()
    out["linear_x_grad"] = _np(x.grad)
    x2 = a.clone().requires_grad_()
    (F.linear(x2, w).tanh().sum() + (x2 * 3).sum()).backward()
    out["mixed_x_grad"] = _np(x2.grad)
    norm = torch.nn.LayerNorm(8)
    _init_like(torch, norm)
    opt = torch.optim.Adam(norm.parameters(), lr=0.1)
    for step in range(2):
        xs = _data(torch, 2, 4, 8, seed=30 + step)
        (norm(xs) * torch.arange(8.0)).sum().backward()
        if step == 0:
            out["clip_total"] = float(torch.nn.utils.clip_grad_norm_(norm.parameters(), 1.0))
        opt.step()
        opt.zero_grad()
    out["sp_trained"] = [_np(p) for p in norm.parameters()]
    return out


def run(rank, fw, init_method, out_dir):
    torch = importlib.import_module(fw)
    dist = importlib.import_module(fw + ".distributed")
    dt_mod = importlib.import_module(fw + ".distributed.tensor")
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    mesh = dt_mod.init_device_mesh("cpu", (2,))
    res = cases(torch, dt_mod, mesh)
    tp = importlib.import_module(fw + ".distributed.tensor.parallel")
    try:
        res["partial_grads"] = partial_grads(torch, dt_mod, tp, mesh, rank)
    except Exception as e:  # noqa: BLE001
        res["partial_grads"] = ("raises", type(e).__name__, str(e))
    with open(os.path.join(out_dir, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(res, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    import pathlib
    import sys
    import tempfile

    from tests.distributed.conftest import spawn2

    tmp = pathlib.Path(tempfile.mkdtemp())
    got = {fw: spawn2(tmp, run, fw) for fw in sys.argv[1:]}
    ref = partial_grads_reference(importlib.import_module(sys.argv[1]))
    for fw in got:
        pg = got[fw][0]["partial_grads"]
        if isinstance(pg, tuple):
            print(fw, pg)
            continue
        print(fw, pg["linear_x_grad"][0], pg["mixed_x_grad"][0], pg["sp_grad_layout"],
              pg["clip_total"], ref["clip_total"],
              np.allclose(pg["linear_x_grad"][1], ref["linear_x_grad"], atol=1e-5),
              np.allclose(pg["mixed_x_grad"][1], ref["mixed_x_grad"], atol=1e-5),
              all(np.allclose(p, q, atol=1e-5) for p, q in zip(pg["sp_trained"],
                                                                 ref["sp_trained"])))
    for name in got[sys.argv[1]][0]:
        if name == "partial_grads":
            continue
        for fw in got:
            r = got[fw][0][name]
            if r[0] == "raises":
                print(f"{name:20s} {fw:6s} {r}")
                continue
            print(f"{name:20s} {fw:6s} out={r[0]} grads={[g[0] for g in r[2]]}")
        if len(got) == 2:
            a, b = got[sys.argv[1]][0][name], got[sys.argv[2]][0][name]
            if a[0] != "raises" and b[0] != "raises":
                same = np.allclose(a[1], b[1], atol=1e-5) and all(
                    np.allclose(x[1], y[1], atol=1e-4) for x, y in zip(a[2], b[2]))
                print(" " * 28, "values equal:", same)

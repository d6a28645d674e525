"""The flat optimizer step (NOTE [ Flat optimizer step ]) against the per-parameter loop.

Both paths run the same elementwise arithmetic, so their trajectories must agree bit for bit;
the flat one must also keep the state PyTorch-shaped (one tensor per parameter and key).
"""

import numpy as np
import pytest

import ember
from ember.optim import _flat
from tests.optim.test_optimizers import CASES

IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CASES)]


def _params(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 3, 2), (5,)]
    return [ember.nn.Parameter(ember.from_numpy(rng.standard_normal(s).astype(np.float32)))
            for s in shapes]


def _loss(ps, step):
    w, b, k, extra = ps
    loss = ((w * b).sin().sum() + (k ** 2).sum() * 0.3 + (w.sum(0) * b).cos().sum())
    if step % 2 == 0:  # the last parameter has a gradient on even steps only
        loss = loss + (extra * extra.exp()).sum()
    return loss


def _run(name, kwargs, foreach, steps=6, between=None):
    ps = _params()
    opt = getattr(ember.optim, name)(ps, foreach=foreach, **kwargs)
    for i in range(steps):
        opt.zero_grad()
        _loss(ps, i).backward()
        opt.step()
        if between is not None:
            opt = between(i, opt, ps) or opt
    return [p.detach().numpy().copy() for p in ps], opt


def _state_arrays(opt):
    return {(i, k): v.numpy().copy() for i, st in opt.state_dict()["state"].items()
            for k, v in st.items() if isinstance(v, ember.Tensor)}


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_flat_step_equals_loop(name, kwargs):
    flat, fopt = _run(name, kwargs, foreach=True)
    loop, lopt = _run(name, kwargs, foreach=False)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)
    fs, ls = _state_arrays(fopt), _state_arrays(lopt)
    assert fs.keys() == ls.keys()
    for key in fs:
        np.testing.assert_array_equal(fs[key], ls[key], err_msg=str(key))
    assert fopt.__dict__.get("_flat_layouts") and not lopt.__dict__.get("_flat_layouts")


def test_state_entries_are_views_of_one_buffer():
    ps = _params()
    opt = ember.optim.Adam(ps[:3], foreach=True)
    _loss(ps, 1).backward()
    opt.step()
    m = [opt.state[p]["exp_avg"] for p in ps[:3]]
    assert [tuple(t.shape) for t in m] == [tuple(p.shape) for p in ps[:3]]
    assert m[0]._base is not None and m[0]._base is m[1]._base is m[2]._base
    assert all(opt.state[p]["step"].dim() == 0 and opt.state[p]["step"].item() == 1
               for p in ps[:3])


def test_state_edited_in_place_is_seen_by_the_next_step():
    def reset(i, opt, ps):
        if i == 2:
            opt.state[ps[0]]["exp_avg"].zero_()
            opt.state[ps[2]]["exp_avg_sq"].mul_(2)

    flat, _ = _run("Adam", {"lr": 0.01}, True, between=reset)
    loop, _ = _run("Adam", {"lr": 0.01}, False, between=reset)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)


def test_state_replaced_or_reloaded_rebuilds_the_buffers():
    def reload(i, opt, ps):
        if i == 2:
            sd = opt.state_dict()
            fresh = ember.optim.AdamW(ps, lr=0.01, foreach=opt.defaults["foreach"])
            fresh.load_state_dict(sd)
            return fresh
        if i == 4:
            opt.state[ps[1]]["exp_avg"] = ember.ones(4)

    flat, _ = _run("AdamW", {"lr": 0.01}, True, between=reload)
    loop, _ = _run("AdamW", {"lr": 0.01}, False, between=reload)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)


def test_parameters_at_different_steps_fall_back_to_the_loop():
    # the last parameter gets gradients on even steps only, so its Adam step count lags:
    # the flat path must notice and still give the loop's numbers
    flat, fopt = _run("Adam", {"lr": 0.01}, True)
    steps = [fopt.state[p]["step"].item() for p in fopt.param_groups[0]["params"]]
    assert steps == [6, 6, 6, 3]
    loop, _ = _run("Adam", {"lr": 0.01}, False)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)


def test_parameters_are_bucketed_up_to_the_bucket_size(monkeypatch):
    # sizes 12, 4, 12, 5 with buckets of 16: {w, b} together, k and extra alone (a run of
    # one keeps its own state tensors: nothing to concatenate)
    monkeypatch.setattr(_flat, "_BUCKET_NUMEL", 16)
    ps = _params()
    opt = ember.optim.SGD(ps, lr=0.1, momentum=0.9)
    _loss(ps, 0).backward()
    opt.step()
    bufs = [opt.state[p]["momentum_buffer"] for p in ps]
    assert bufs[0]._base is not None and bufs[0]._base is bufs[1]._base
    assert bufs[2]._base is None and bufs[3]._base is None
    flat, _ = _run("SGD", {"lr": 0.1, "momentum": 0.9}, None)
    loop, _ = _run("SGD", {"lr": 0.1, "momentum": 0.9}, False)
    for a, b in zip(flat, loop):
        np.testing.assert_array_equal(a, b)


def test_mixed_dtypes_run_per_parameter():
    a = ember.nn.Parameter(ember.ones(3))
    b = ember.nn.Parameter(ember.ones(3, dtype=ember.float64))
    opt = ember.optim.SGD([a, b], lr=0.5, momentum=0.9, foreach=True)
    (a.sum() + (b * 2).sum()).backward()
    opt.step()
    assert not opt.__dict__.get("_flat_layouts")
    assert a.tolist() == [0.5] * 3 and b.tolist() == [0.0] * 3


def test_flat_step_bumps_parameter_versions():
    ps = _params()
    opt = ember.optim.SGD(ps, lr=0.1, foreach=True)
    before = [p._version for p in ps]
    _loss(ps, 0).backward()
    opt.step()
    assert all(p._version == v + 1 for p, v in zip(ps, before))


def test_flat_state_dict_loads_into_torch():
    torch = pytest.importorskip("torch")
    ps = _params()
    opt = ember.optim.Adam(ps, lr=0.01, foreach=True)
    for i in range(2):
        opt.zero_grad()
        _loss(ps, i).backward()
        opt.step()
    tps = [torch.nn.Parameter(torch.from_numpy(p.detach().numpy().copy())) for p in ps]
    topt = torch.optim.Adam(tps, lr=0.01)
    topt.load_state_dict({"state": {k: {n: torch.from_numpy(v.numpy().copy())
                                        for n, v in st.items()}
                                    for k, st in opt.state_dict()["state"].items()},
                          "param_groups": opt.state_dict()["param_groups"]})
    for k, st in opt.state_dict()["state"].items():
        for n, v in st.items():
            np.testing.assert_array_equal(topt.state_dict()["state"][k][n].numpy(), v.numpy())


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad"])
def test_fused_option_checks_and_runs_flat(name):
    ps = _params()
    with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
        getattr(ember.optim, name)(ps, lr=0.1, fused=True, foreach=True)
    with pytest.raises(RuntimeError, match="`fused` does not support `differentiable`"):
        getattr(ember.optim, name)(ps, lr=0.1, fused=True, differentiable=True)
    opt = getattr(ember.optim, name)(ps, lr=0.1, fused=True)
    _loss(ps, 0).backward()
    opt.step()
    assert opt.__dict__.get("_flat_layouts")


@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_flat_step_with_0d_parameters(name, kwargs):
    # a 0-d parameter's per-element state is 0-d like a step counter; buckets of only 0-d
    # parameters run the loop, mixed ones tell the two apart by the parameters' shapes
    def run(foreach, shapes):
        ps = [ember.nn.Parameter(ember.full(s, float(i + 1))) for i, s in enumerate(shapes)]
        opt = getattr(ember.optim, name)(ps, foreach=foreach, **kwargs)
        for _ in range(4):
            opt.zero_grad()
            sum((p * p * (i + 1)).sum().sin() for i, p in enumerate(ps)).backward()
            opt.step()
        return [p.detach().numpy().copy() for p in ps]

    for shapes in ([(), ()], [(), (3,), ()]):
        for a, b in zip(run(True, shapes), run(False, shapes)):
            np.testing.assert_array_equal(a, b)


def test_parameter_listed_twice_updates_like_the_loop():
    def run(foreach):
        p, q = ember.nn.Parameter(ember.ones(3)), ember.nn.Parameter(ember.ones(2))
        with pytest.warns(UserWarning, match="duplicate parameters"):
            opt = ember.optim.Adam([p, q, p], lr=0.1, foreach=foreach)
        for _ in range(3):
            opt.zero_grad()
            ((p * p).sum() + q.sum()).backward()
            opt.step()
        return p.tolist(), q.tolist()

    assert run(True) == run(False)

"""Learning-rate schedulers' state as PyTorch keeps it: the same state_dict keys, torch-saved
state dicts that load and continue the same schedule, resuming, tensor lrs, and the checks of
the composed schedulers."""

import io
import warnings

import pytest

import ember
from tests.conftest import HAS_TORCH, needs_torch_2_13

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


class _Halve:
    """A callable object: its attributes are what a scheduler's state_dict keeps of it."""

    def __init__(self):
        self.k = 0.5

    def __call__(self, e):
        return self.k ** e


def _opt(mod, kind="SGD"):
    ps = [mod.nn.Parameter(mod.zeros(2)), mod.nn.Parameter(mod.zeros(2))]
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}]
    if kind == "Adam":
        return mod.optim.Adam(groups, lr=0.1)
    return mod.optim.SGD(groups, lr=0.1, momentum=0.9)


def _sched(m, o, name):
    L = m.optim.lr_scheduler
    return {
        "LambdaLR": lambda: L.LambdaLR(o, _Halve()),
        "MultiplicativeLR": lambda: L.MultiplicativeLR(o, lambda e: 0.9),
        "StepLR": lambda: L.StepLR(o, 3, 0.5),
        "MultiStepLR": lambda: L.MultiStepLR(o, [2, 5, 5], 0.5),
        "ConstantLR": lambda: L.ConstantLR(o, 0.5, 3),
        "LinearLR": lambda: L.LinearLR(o, 0.25, 1.0, 4),
        "ExponentialLR": lambda: L.ExponentialLR(o, 0.8),
        "PolynomialLR": lambda: L.PolynomialLR(o, 6, 2.0),
        "CosineAnnealingLR": lambda: L.CosineAnnealingLR(o, 4, 0.01),
        "CosineAnnealingWarmRestarts": lambda: L.CosineAnnealingWarmRestarts(o, 3, 2, 0.001),
        "CyclicLR": lambda: L.CyclicLR(o, 0.01, 0.1, 2, 4, mode="exp_range", gamma=0.9),
        "CyclicLR-fn": lambda: L.CyclicLR(o, 0.01, 0.1, 2, scale_fn=_Halve(),
                                          scale_mode="iterations"),
        "OneCycleLR": lambda: L.OneCycleLR(o, 0.5, total_steps=14, anneal_strategy="linear"),
        "SequentialLR": lambda: L.SequentialLR(
            o, [L.LinearLR(o, 0.1, total_iters=3), L.ExponentialLR(o, 0.7)], [3]),
        "ChainedScheduler": lambda: L.ChainedScheduler(
            [L.ConstantLR(o, 0.5, 2), L.ExponentialLR(o, 0.9)]),
        "SWALR": lambda: m.optim.swa_utils.SWALR(o, 0.05, 3, "linear"),
        "ReduceLROnPlateau": lambda: L.ReduceLROnPlateau(o, patience=1, min_lr=[0.001, 0.0]),
    }[name]()


NAMES = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
         "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
         "CyclicLR", "CyclicLR-fn", "OneCycleLR", "SequentialLR", "ChainedScheduler", "SWALR",
         "ReduceLROnPlateau"]
METRICS = [3.0, 2.0, 2.0, 2.0, 2.5, 1.0, 1.0, 1.0]


def _run(sched, opt, steps, start=0):
    lrs = []
    for i in range(start, start + steps):
        opt.step()
        if type(sched).__name__ == "ReduceLROnPlateau":
            sched.step(METRICS[i % len(METRICS)])
        else:
            sched.step()
        lrs.extend(float(v) for v in sched.get_last_lr())
    return lrs


def _keys(state):
    keys = sorted(state)
    nested = [sorted(s) for s in state.get("_schedulers", [])]
    return keys, nested


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_keys_match_torch(name):
    import torch

    got, want = [], []
    for mod, out in ((ember, got), (torch, want)):
        o = _opt(mod)
        s = _sched(mod, o, name)
        out.append(_keys(s.state_dict()))
        _run(s, o, 3)
        out.append(_keys(s.state_dict()))
    assert got == want


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_torch_saved_state_dict_continues_the_schedule(name, kind):
    import torch

    o = _opt(torch, kind)
    s = _sched(torch, o, name)
    _run(s, o, 5)
    buf = io.BytesIO()
    torch.save({"sched": s.state_dict(), "opt": o.state_dict()}, buf)
    want = _run(s, o, 4, start=5)

    buf.seek(0)
    saved = ember.load(buf, weights_only=False)
    eo = _opt(ember, kind)
    es = _sched(ember, eo, name)
    eo.load_state_dict(saved["opt"])
    es.load_state_dict(saved["sched"])
    got = _run(es, eo, 4, start=5)
    assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_ember_saved_state_dict_continues_the_schedule_in_torch(name, kind):
    import torch

    o = _opt(ember, kind)
    s = _sched(ember, o, name)
    _run(s, o, 5)
    buf = io.BytesIO()
    ember.save({"sched": s.state_dict(), "opt": o.state_dict()}, buf)
    want = _run(s, o, 4, start=5)

    buf.seek(0)
    saved = torch.load(buf, weights_only=False)
    to = _opt(torch, kind)
    ts = _sched(torch, to, name)
    to.load_state_dict(saved["opt"])
    ts.load_state_dict(saved["sched"])
    assert _run(ts, to, 4, start=5) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("name", ["ExponentialLR", "CosineAnnealingLR", "MultiplicativeLR",
                                  "PolynomialLR", "LinearLR"])
def test_resume_with_last_epoch_keeps_the_current_lr(name):
    import torch

    def first_lr(mod):
        L = mod.optim.lr_scheduler
        o = _opt(mod)
        for g in o.param_groups:
            g["initial_lr"] = 1.0
        s = {"ExponentialLR": lambda: L.ExponentialLR(o, 0.5, last_epoch=3),
             "CosineAnnealingLR": lambda: L.CosineAnnealingLR(o, 10, last_epoch=3),
             "MultiplicativeLR": lambda: L.MultiplicativeLR(o, lambda e: 0.5, last_epoch=3),
             "PolynomialLR": lambda: L.PolynomialLR(o, 10, last_epoch=3),
             "LinearLR": lambda: L.LinearLR(o, 0.5, total_iters=10, last_epoch=3)}[name]()
        return s.get_last_lr()

    assert first_lr(ember) == first_lr(torch)


def test_resume_without_initial_lr_raises_key_error():
    import torch

    msgs = []
    for mod in (ember, torch):
        with pytest.raises(KeyError) as info:
            mod.optim.lr_scheduler.StepLR(_opt(mod), 2, last_epoch=4)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_tensor_lr_is_updated_in_place():
    p = ember.nn.Parameter(ember.zeros(2))
    lr = ember.tensor(0.01)
    opt = ember.optim.Adam([p], lr=lr)
    sched = ember.optim.lr_scheduler.ExponentialLR(opt, 0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr
    assert float(lr) == pytest.approx(0.005)
    assert sched.get_last_lr()[0] is not lr  # a copy, as torch's


def test_warm_restarts_step_count_stays_zero():
    import torch

    counts = []
    for mod in (ember, torch):
        o = _opt(mod)
        s = mod.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.step()  # before optimizer.step(): no warning for this schedule, as in torch
        counts.append((s._step_count, len(w)))
    assert counts[0] == counts[1] == (0, 0)


@needs_torch_2_13
def test_sequential_milestone_zero_starts_with_the_second_scheduler():
    import torch

    def lrs(mod):
        L = mod.optim.lr_scheduler
        o = _opt(mod)
        s = L.SequentialLR(o, [L.ConstantLR(o, 0.1), L.StepLR(o, 2)], [0])
        return s.get_last_lr() + _run(s, o, 4)

    assert lrs(ember) == pytest.approx(lrs(torch))


@pytest.mark.parametrize("composite", ["SequentialLR", "ChainedScheduler"])
def test_composite_refuses_reduce_on_plateau(composite):
    o = _opt(ember)
    L = ember.optim.lr_scheduler
    plateau = L.ReduceLROnPlateau(o)
    args = (o, [plateau], []) if composite == "SequentialLR" else ([plateau],)
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        getattr(L, composite)(*args)


def test_reduce_on_plateau_extends_scalar_min_lr_to_a_new_group():
    o = _opt(ember)
    s = ember.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0, min_lr=0.04)
    o.add_param_group({"params": [ember.nn.Parameter(ember.zeros(1))], "lr": 1.0})
    s.step(1.0)
    s.step(2.0)
    assert s.min_lrs == [0.04, 0.04, 0.04]
    assert s.get_last_lr() == pytest.approx([0.04, 0.04, 0.1])


def test_reduce_on_plateau_list_min_lr_refuses_a_new_group():
    o = _opt(ember)
    s = ember.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0, min_lr=[0.0, 0.0])
    o.add_param_group({"params": [ember.nn.Parameter(ember.zeros(1))], "lr": 1.0})
    s.step(1.0)
    with pytest.raises(RuntimeError, match="number of param groups"):
        s.step(2.0)


def test_cyclic_custom_scale_fn_state_restored_into_the_callable():
    L = ember.optim.lr_scheduler
    o = _opt(ember)
    s = L.CyclicLR(o, 0.01, 0.1, 2, scale_fn=_Halve())
    s._scale_fn_custom.k = 0.25
    state = s.state_dict()
    assert state["_scale_fn_custom"] == {"k": 0.25}
    s2 = L.CyclicLR(_opt(ember), 0.01, 0.1, 2, scale_fn=_Halve())
    s2.load_state_dict(state)
    assert s2._scale_fn_custom.k == 0.25
    assert s2.scale_fn(2) == 0.0625

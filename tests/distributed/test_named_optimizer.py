"""``_NamedOptimizer`` (one process, no group) against PyTorch's."""

import warnings

import numpy as np
import pytest

import ember
from ember.distributed.optim import _NamedOptimizer

torch = pytest.importorskip("torch")
from torch.distributed.optim import _NamedOptimizer as _TorchNamed  # noqa: E402


def _nets():
    """The same two-layer net in both frameworks."""
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(s).astype(np.float32) for s in [(3, 2), (3,), (1, 3), (1,)]]
    out = []
    for fw in (ember, torch):
        net = fw.nn.Sequential(fw.nn.Linear(2, 3), fw.nn.Tanh(), fw.nn.Linear(3, 1))
        with fw.no_grad():
            for p, w in zip(net.parameters(), ws):
                p.copy_(fw.from_numpy(w))
        out.append(net)
    return out


def _train(fw, net, opt, steps=2):
    x = fw.from_numpy(np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2))
    for _ in range(steps):
        net.zero_grad()  # torch's _NamedOptimizer.zero_grad fails (no ``defaults``)
        (net(x) ** 2).mean().backward()
        opt.step()


def _plain(sd):
    """A state dict with tensors as NumPy arrays (comparable across frameworks)."""
    return {"state": {k: {n: np.asarray(v.detach().numpy() if hasattr(v, "numpy") else v)
                          for n, v in st.items()} for k, st in sd["state"].items()},
            "param_groups": sd["param_groups"]}


def _assert_same(a, b):
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for k in a["state"]:
        assert a["state"][k].keys() == b["state"][k].keys()
        for n in a["state"][k]:
            np.testing.assert_allclose(a["state"][k][n], b["state"][k][n], rtol=1e-5,
                                       atol=1e-7)


def test_named_optimizer_state_dict_keyed_by_name_as_torch():
    ours_net, theirs_net = _nets()
    ours = _NamedOptimizer(ours_net.named_parameters(), ember.optim.Adam, lr=0.05)
    theirs = _TorchNamed(theirs_net.named_parameters(), torch.optim.Adam, lr=0.05)
    _train(ember, ours_net, ours)
    _train(torch, theirs_net, theirs)
    _assert_same(_plain(ours.state_dict()), _plain(theirs.state_dict()))
    assert ours.state is ours._optimizer.state


def test_named_optimizer_param_groups_warn_and_order_as_torch():
    ours_net, theirs_net = _nets()
    made = []
    for fw, cls, net in ((ember, _NamedOptimizer, ours_net), (torch, _TorchNamed, theirs_net)):
        groups = [{"params": [net[2].weight, net[0].bias], "lr": 0.2},
                  {"params": net[0].weight}]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            opt = cls(net.named_parameters(), fw.optim.SGD, groups, None, lr=0.1, momentum=0.9)
        _train(fw, net, opt)
        made.append((opt.ordered_param_keys, [str(m.message) for m in w],
                     _plain(opt.state_dict())))
    assert made[0][:2] == made[1][:2]
    _assert_same(made[0][2], made[1][2])


def test_named_optimizer_load_into_differently_ordered_optimizer():
    net, _ = _nets()
    src = _NamedOptimizer(net.named_parameters(), ember.optim.Adam, lr=0.05)
    _train(ember, net, src)
    sd = src.state_dict()
    dst = _NamedOptimizer(reversed(list(net.named_parameters())), ember.optim.Adam, lr=0.5)
    dst.init_state()
    dst.load_state_dict(sd)
    _assert_same(_plain(dst.state_dict()), _plain(sd))
    assert dst.param_groups[0]["lr"] == 0.05


@pytest.mark.parametrize("case", ["uninitialized", "missing_param", "missing_state_key"])
def test_named_optimizer_bad_load_raises_as_torch(case):
    got = []
    for fw, cls, net in zip((ember, torch), (_NamedOptimizer, _TorchNamed), _nets()):
        opt = cls(net.named_parameters(), fw.optim.Adam, lr=0.1)
        try:
            if case == "uninitialized":
                opt.load_state_dict({"state": {}, "param_groups": []})
            elif case == "missing_param":
                cls(net.named_parameters(), fw.optim.SGD,
                    [{"params": [fw.nn.Parameter(fw.ones(1))]}], lr=0.1)
            else:
                opt.init_state()
                sd = opt.state_dict()
                st = dict(sd["state"]["0.bias"])  # a copy: the dicts are the optimizer's
                st["bogus"] = st.pop("exp_avg")
                sd["state"]["0.bias"] = st
                opt.load_state_dict(sd)
            got.append(None)
        except ValueError as e:
            got.append(str(e).split("Parameter containing")[0])
    assert got[0] == got[1] and got[0] is not None


def test_named_optimizer_add_param_group_as_torch():
    got = []
    for fw, cls, net in zip((ember, torch), (_NamedOptimizer, _TorchNamed), _nets()):
        named = list(net.named_parameters())
        opt = cls(named[:2], fw.optim.SGD, lr=0.1)
        with pytest.raises(ValueError, match="not in the module"):
            opt.add_param_group({"params": fw.nn.Parameter(fw.ones(1))})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the param_groups warning (tested above)
            opt2 = cls(named, fw.optim.SGD, [{"params": [named[0][1]]}], lr=0.1)
        opt2.add_param_group({"params": named[3][1], "lr": 0.3})
        got.append((opt2.ordered_param_keys, len(opt2.param_groups),
                    opt2.param_groups[1]["lr"]))
    assert got[0] == got[1]

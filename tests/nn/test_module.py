"""nn.Module: registration, iteration, state_dict, modes, hooks, repr, containers."""

from collections import OrderedDict

import pytest

import ember
from ember import nn


class Leaf(nn.Module):
    def __init__(self, n=2):
        super().__init__()
        self.weight = nn.Parameter(ember.ones(n))
        self.register_buffer("running", ember.zeros(n))
        self.register_buffer("scratch", ember.zeros(1), persistent=False)

    def forward(self, x):
        return x * self.weight

    def extra_repr(self):
        return f"n={self.weight.shape[0]}"


class Tree(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Leaf()
        self.b = nn.Sequential(Leaf(), Leaf(3))
        self.shared = self.a  # the same module twice

    def forward(self, x):
        return self.a(x)


def test_attribute_assignment_registers_state():
    m = Leaf()
    assert list(m._parameters) == ["weight"]
    assert set(m._buffers) == {"running", "scratch"}
    m.extra = nn.Parameter(ember.zeros(1))
    assert "extra" in m._parameters
    del m.extra
    assert "extra" not in m._parameters


def test_assigning_tensor_to_parameter_slot_raises():
    m = Leaf()
    with pytest.raises(TypeError, match="cannot assign"):
        m.weight = ember.ones(2)
    m.weight = None
    assert m.weight is None


def test_parameters_are_deduplicated_and_named_with_prefixes():
    t = Tree()
    names = [n for n, _ in t.named_parameters()]
    assert names == ["a.weight", "b.0.weight", "b.1.weight"]
    assert len(list(t.parameters())) == 3
    assert [n for n, _ in t.named_modules()] == ["", "a", "b", "b.0", "b.1"]
    assert [n for n, _ in t.named_children()] == ["a", "b"]
    assert [n for n, _ in t.named_buffers(prefix="m")][:1] == ["m.a.running"]
    assert len(list(t.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in t.named_parameters(recurse=False)] == []


def test_state_dict_keys_order_and_persistence():
    t = Tree()
    keys = list(t.state_dict())
    assert keys == ["a.weight", "a.running", "b.0.weight", "b.0.running", "b.1.weight",
                    "b.1.running", "shared.weight", "shared.running"]
    sd = t.state_dict()
    assert sd._metadata[""] == {"version": 1}
    assert not sd["a.weight"].requires_grad


def test_load_state_dict_strict_reports_missing_and_unexpected():
    m = Leaf()
    sd = OrderedDict(weight=ember.full((2,), 3.0), running=ember.ones(2))
    r = m.load_state_dict(sd)
    assert r.missing_keys == [] and r.unexpected_keys == []
    assert m.weight.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "running"'):
        m.load_state_dict({"weight": ember.ones(2)})
    r = m.load_state_dict({"weight": ember.ones(2), "bogus": ember.ones(1)}, strict=False)
    assert r.missing_keys == ["running"] and r.unexpected_keys == ["bogus"]


def test_load_state_dict_shape_mismatch_raises_and_keeps_value():
    m = Leaf()
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        m.load_state_dict({"weight": ember.ones(3), "running": ember.ones(2)})
    assert m.weight.tolist() == [1.0, 1.0]


def test_load_state_dict_assign_replaces_parameter():
    m = Leaf()
    new = ember.full((2,), 7.0)
    m.load_state_dict({"weight": new, "running": ember.zeros(2)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m.weight.tolist() == [7.0, 7.0]


def test_train_eval_propagate():
    t = Tree()
    t.eval()
    assert not any(m.training for m in t.modules())
    t.train()
    assert all(m.training for m in t.modules())


def test_zero_grad_sets_none_by_default():
    m = Leaf()
    m.weight.grad = ember.ones(2)
    m.zero_grad()
    assert m.weight.grad is None
    m.weight.grad = ember.ones(2)
    m.zero_grad(set_to_none=False)
    assert m.weight.grad.tolist() == [0.0, 0.0]


def test_to_dtype_keeps_parameter_identity_and_casts_float_only():
    m = Leaf()
    m.register_buffer("steps", ember.zeros(1, dtype=ember.int64))
    p = m.weight
    m.double()
    assert m.weight is p and p.dtype == ember.float64
    assert m.steps.dtype == ember.int64
    m.to(ember.float32)
    assert p.dtype == ember.float32
    with pytest.raises(TypeError):
        m.to(ember.int32)


def test_forward_hooks_order_and_replacement():
    m = Leaf()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    out = m(ember.ones(2))
    assert calls == ["pre", "post"] and out.tolist() == [3.0, 3.0]
    h1.remove()
    h2.remove()
    assert m(ember.ones(2)).tolist() == [1.0, 1.0]


def test_forward_hooks_with_kwargs():
    class K(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = K()
    m.register_forward_pre_hook(lambda mod, a, kw: (a, {"scale": 3.0}), with_kwargs=True)
    m.register_forward_hook(lambda mod, a, kw, out: out + kw["scale"], with_kwargs=True)
    assert m(ember.ones(1)).tolist() == [6.0]


def test_missing_forward_raises():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(ember.ones(1))


def test_repr_nests_like_pytorch():
    t = Tree()
    assert repr(t) == (
        "Tree(\n"
        "  (a): Leaf(n=2)\n"
        "  (b): Sequential(\n"
        "    (0): Leaf(n=2)\n"
        "    (1): Leaf(n=3)\n"
        "  )\n"
        "  (shared): Leaf(n=2)\n"
        ")")


def test_get_submodule_and_parameter():
    t = Tree()
    assert t.get_submodule("b.1") is t.b[1]
    assert t.get_parameter("b.1.weight") is t.b[1].weight
    with pytest.raises(AttributeError):
        t.get_submodule("b.7")


def test_sequential_indexing_slicing_and_mutation():
    s = nn.Sequential(Leaf(), Leaf(3), Leaf(4))
    assert isinstance(s[1:], nn.Sequential) and len(s[1:]) == 2
    assert s[-1].weight.shape == (4,)
    s.append(Leaf(5))
    s.insert(0, Leaf(6))
    assert [m.weight.shape[0] for m in s] == [6, 2, 3, 4, 5]
    del s[0]
    assert list(s._modules) == ["0", "1", "2", "3"]
    named = nn.Sequential(OrderedDict(first=Leaf()))
    assert list(named._modules) == ["first"]
    with pytest.raises(IndexError):
        s[10]


def test_module_list_and_dict():
    ml = nn.ModuleList([Leaf(), Leaf()])
    ml.append(Leaf(3))
    assert len(ml) == 3 and len(list(ml.parameters())) == 3
    assert "(0-1): 2 x Leaf(n=2)" in repr(ml)
    md = nn.ModuleDict({"x": Leaf()})
    md["y"] = Leaf(3)
    assert list(md.keys()) == ["x", "y"] and "y" in md


def test_parameter_list_and_dict_wrap_tensors():
    pl = nn.ParameterList([ember.ones(2)])
    pl.append(ember.zeros(3))
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(list(pl.parameters())) == 2
    pd = nn.ParameterDict({"a": ember.ones(1)})
    assert isinstance(pd["a"], nn.Parameter) and list(pd.keys()) == ["a"]


def test_parameter_shares_memory_and_repr():
    t = ember.zeros(2)
    p = nn.Parameter(t)
    t.add_(1)
    assert p.tolist() == [1.0, 1.0] and p.requires_grad
    assert repr(p).startswith("Parameter containing:\ntensor([1., 1.], requires_grad=True)")
    assert type(p * 2) is ember.Tensor

"""ember.export's smaller names against torch.export: unflatten, dynamic_shapes
(AdditionalInputs), PassResult, ModuleCallEntry/Signature, CustomDecompTable."""

import pytest

import ember

torch = pytest.importorskip("torch")
import torch.export  # noqa: E402,F811


def _model(L):
    class M(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = L.nn.Sequential(L.nn.Linear(3, 3), L.nn.ReLU())
            self.b = L.nn.Linear(3, 2)

        def forward(self, x):
            return self.b(self.a(x))

    return M()


def _pair():
    e, t = _model(ember), _model(torch)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in e.state_dict().items()})
    return e, t


def test_unflatten_hierarchy_matches_torch():
    e, t = _pair()
    ue = ember.export.unflatten(ember.export.export(e, (ember.randn(4, 3),)))
    ut = torch.export.unflatten(torch.export.export(t, (torch.randn(4, 3),)))
    assert [n for n, _ in ue.named_modules()] == [n for n, _ in ut.named_modules()]
    assert list(ue.state_dict()) == list(ut.state_dict())
    assert str(ue) == str(ut)


def test_unflatten_runs_the_program():
    e, t = _pair()
    x = ember.randn(4, 3)
    u = ember.export.unflatten(ember.export.export(e, (x,)))
    assert ember.allclose(u(x), e(x))
    with pytest.raises(AssertionError):
        u(ember.randn(4, 5))


def test_unflatten_state_is_shared_with_the_graph():
    e, _ = _pair()
    x = ember.randn(4, 3)
    u = ember.export.unflatten(ember.export.export(e, (x,)))
    before = u(x).detach().clone()
    with ember.no_grad():
        u.b.bias.add_(1.0)
    assert ember.allclose(u(x), before + 1)


def test_unflatten_rejects_a_module():
    e, t = _pair()
    with pytest.raises(TypeError):
        ember.export.unflatten(e)


def test_unflatten_submodule_call_raises():
    e, _ = _pair()
    u = ember.export.unflatten(ember.export.export(e, (ember.randn(4, 3),)))
    with pytest.raises(RuntimeError):
        u.b(ember.randn(4, 3))


def test_flat_args_adapter_is_abstract():
    with pytest.raises(TypeError):
        ember.export.FlatArgsAdapter()
    with pytest.raises(TypeError):
        torch.export.FlatArgsAdapter()


def _ai_case(L):
    class N(L.nn.Module):
        def forward(self, x, y):
            return x.sum() + y.sum()

    ai = L.export.dynamic_shapes.AdditionalInputs()
    ai.add((L.ones(2, 3),), {"y": L.ones(4)})
    ai.add((L.ones(2, 5),), {"y": L.ones(6)})
    return N(), ai


def test_additional_inputs_dynamic_shapes_match_torch():
    (en, eai), (tn, tai) = _ai_case(ember), _ai_case(torch)
    got = eai.dynamic_shapes(en, (ember.ones(2, 3),), {"y": ember.ones(4)})
    want = tai.dynamic_shapes(tn, (torch.ones(2, 3),), {"y": torch.ones(4)})
    assert repr(got) == repr(want)


def test_additional_inputs_add_rejects_a_list():
    with pytest.raises(AssertionError):
        ember.export.AdditionalInputs().add([ember.ones(2)])
    with pytest.raises(AssertionError):
        torch.export.AdditionalInputs().add([torch.ones(2)])


def test_additional_inputs_export_and_verify():
    class M(ember.nn.Module):
        def forward(self, x):
            return x * 2

    ai = ember.export.AdditionalInputs()
    ai.add((ember.ones(2, 3),))
    ai.add((ember.ones(5, 3),))
    ep = ember.export.export(M(), (ember.ones(2, 3),), dynamic_shapes=ai)
    ai.verify(ep)
    assert ep.module()(ember.ones(5, 3)).shape == (5, 3)


def test_module_call_graph_fqns_match_torch():
    e, t = _pair()
    ee = ember.export.export(e, (ember.randn(4, 3),))
    te = torch.export.export(t, (torch.randn(4, 3),))
    assert [c.fqn for c in ee.module_call_graph] == [c.fqn for c in te.module_call_graph]
    assert ee.module_call_graph[0].signature.forward_arg_names == ["x"]


def test_small_names_match_torch():
    assert ember.export.DEFAULT_PICKLE_PROTOCOL == torch.export.DEFAULT_PICKLE_PROTOCOL
    assert repr(ember.export.ModuleCallEntry("a")) == repr(torch.export.ModuleCallEntry("a"))
    r = ember.export.PassResult(None, True)
    assert (r.graph_module, r.modified) == (None, True)
    assert ember.export.log.name == "ember.export"


def test_custom_decomp_table_is_a_dict():
    t = ember.export.CustomDecompTable()
    assert isinstance(t, dict) and isinstance(t.copy(), ember.export.CustomDecompTable)
    op = ember.ops.aten.relu.default
    t[op] = lambda x: ember.clamp(x, min=0)
    assert list(t.materialize()) == [op]
    t.pop(op)
    assert t.materialize() == {}

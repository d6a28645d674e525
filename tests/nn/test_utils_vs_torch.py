"""nn.utils against PyTorch: clipping, vectors, rnn packing (and RNNs on packed input),
pruning, parametrizations, fusion, functional_call, container reprs."""

import warnings

import numpy as np
import pytest

import ember

try:
    import torch
    import torch.nn.utils.parametrizations
    import torch.nn.utils.prune

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _e(a):
    return ember.from_numpy(np.array(a, copy=True))


def _t(a):
    return torch.from_numpy(np.array(a, copy=True))


def _close(e, t, tol=1e-5):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _same_linear(*shape):
    tm = torch.nn.Linear(*shape)
    em = ember.nn.Linear(*shape)
    em.load_state_dict({k: _e(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return em, tm


def _params_with_grads(seed=0):
    rng = np.random.default_rng(seed)
    grads = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (4,)]]
    ours, theirs = [], []
    for g in grads:
        e, t = ember.nn.Parameter(_e(g)), torch.nn.Parameter(_t(g))
        e.grad, t.grad = _e(g), _t(g)
        ours.append(e)
        theirs.append(t)
    return ours, theirs


@pytest.mark.parametrize("kwargs", [{"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1},
                                    {"max_norm": 0.5, "norm_type": "inf"},
                                    {"max_norm": 2.0, "norm_type": 3.0}])
def test_clip_grad_norm_matches_torch(kwargs):
    ours, theirs = _params_with_grads()
    _close(ember.nn.utils.clip_grad_norm_(ours, **kwargs),
           torch.nn.utils.clip_grad_norm_(theirs, **kwargs))
    for e, t in zip(ours, theirs):
        _close(e.grad, t.grad)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_get_total_norm_and_clip_with_norm_match_torch(norm_type):
    ours, theirs = _params_with_grads(1)
    en = ember.nn.utils.get_total_norm([p.grad for p in ours], norm_type)
    tn = torch.nn.utils.get_total_norm([p.grad for p in theirs], norm_type)
    _close(en, tn)
    ember.nn.utils.clip_grads_with_norm_(ours, 0.5, en)
    torch.nn.utils.clip_grads_with_norm_(theirs, 0.5, tn)
    for e, t in zip(ours, theirs):
        _close(e.grad, t.grad)


def test_clip_grad_value_and_parameters_to_vector_match_torch():
    ours, theirs = _params_with_grads(2)
    ember.nn.utils.clip_grad_value_(ours, 0.1)
    torch.nn.utils.clip_grad_value_(theirs, 0.1)
    _close(ours[0].grad, theirs[0].grad)
    vec = ember.nn.utils.parameters_to_vector(ours)
    _close(vec, torch.nn.utils.parameters_to_vector(theirs))
    ember.nn.utils.vector_to_parameters(vec * 2, ours)
    torch.nn.utils.vector_to_parameters(torch.nn.utils.parameters_to_vector(theirs) * 2, theirs)
    _close(ours[1], theirs[1])


SEQS = [np.random.default_rng(3).standard_normal((n, 3)).astype(np.float32) for n in (4, 2, 3)]


@pytest.mark.parametrize("kwargs", [{}, {"batch_first": True}, {"padding_value": -1.0},
                                    {"batch_first": True, "padding_side": "left"}])
def test_pad_sequence_matches_torch(kwargs):
    _close(ember.nn.utils.rnn.pad_sequence([_e(s) for s in SEQS], **kwargs),
           torch.nn.utils.rnn.pad_sequence([_t(s) for s in SEQS], **kwargs))


def _packed():
    return (ember.nn.utils.rnn.pack_sequence([_e(s) for s in SEQS], enforce_sorted=False),
            torch.nn.utils.rnn.pack_sequence([_t(s) for s in SEQS], enforce_sorted=False))


def test_pack_sequence_fields_match_torch():
    ep, tp = _packed()
    for field in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        _close(getattr(ep, field), getattr(tp, field))


def test_pad_packed_and_unpack_match_torch():
    ep, tp = _packed()
    eo, el = ember.nn.utils.rnn.pad_packed_sequence(ep, batch_first=True, total_length=6)
    to, tl = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first=True, total_length=6)
    _close(eo, to)
    _close(el, tl)
    for e, t in zip(ember.nn.utils.rnn.unpack_sequence(ep),
                    torch.nn.utils.rnn.unpack_sequence(tp)):
        _close(e, t)


def test_pack_padded_and_unpad_match_torch():
    padded = np.random.default_rng(4).standard_normal((3, 5, 2)).astype(np.float32)
    lengths = [5, 2, 4]
    ep = ember.nn.utils.rnn.pack_padded_sequence(_e(padded), lengths, batch_first=True,
                                                 enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_padded_sequence(_t(padded), lengths, batch_first=True,
                                                 enforce_sorted=False)
    _close(ep.data, tp.data)
    for e, t in zip(ember.nn.utils.rnn.unpad_sequence(_e(padded), ember.tensor(lengths), True),
                    torch.nn.utils.rnn.unpad_sequence(_t(padded), torch.tensor(lengths), True)):
        _close(e, t)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_rnn_on_packed_sequence_matches_torch(cls):
    tm = getattr(torch.nn, cls)(3, 5, num_layers=2, bidirectional=True)
    em = getattr(ember.nn, cls)(3, 5, num_layers=2, bidirectional=True)
    em.load_state_dict({k: _e(v.detach().numpy()) for k, v in tm.state_dict().items()})
    ep, tp = _packed()
    (eo, eh), (to, th) = em(ep), tm(tp)
    _close(eo.data, to.data)
    _close(eh[0] if cls == "LSTM" else eh, th[0] if cls == "LSTM" else th)
    eo.data.sum().backward()
    to.data.sum().backward()
    for e, t in zip(em.parameters(), tm.parameters()):
        _close(e.grad, t.grad, 1e-4)


def test_prune_masks_and_remove_match_torch():
    em, tm = _same_linear(4, 3)
    ember.nn.utils.prune.l1_unstructured(em, "weight", amount=0.4)
    torch.nn.utils.prune.l1_unstructured(tm, "weight", amount=0.4)
    _close(em.weight_mask, tm.weight_mask)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    ember.nn.utils.prune.ln_structured(em, "weight", amount=1, n=2, dim=0)
    torch.nn.utils.prune.ln_structured(tm, "weight", amount=1, n=2, dim=0)
    _close(em.weight_mask, tm.weight_mask)
    _close(em.weight, tm.weight)
    ember.nn.utils.prune.remove(em, "weight")
    torch.nn.utils.prune.remove(tm, "weight")
    assert sorted(em.state_dict()) == sorted(tm.state_dict())


def test_global_unstructured_matches_torch():
    pairs = [_same_linear(4, 3), _same_linear(3, 2)]
    ember.nn.utils.prune.global_unstructured(
        [(e, "weight") for e, _ in pairs], pruning_method=ember.nn.utils.prune.L1Unstructured,
        amount=0.5)
    torch.nn.utils.prune.global_unstructured(
        [(t, "weight") for _, t in pairs], pruning_method=torch.nn.utils.prune.L1Unstructured,
        amount=0.5)
    for e, t in pairs:
        _close(e.weight_mask, t.weight_mask)


def test_parametrized_weight_norm_matches_torch():
    em, tm = _same_linear(4, 3)
    ember.nn.utils.parametrizations.weight_norm(em)
    torch.nn.utils.parametrizations.weight_norm(tm)
    assert repr(em) == repr(tm)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())
    x = np.random.default_rng(5).standard_normal((2, 4)).astype(np.float32)
    em(_e(x)).sum().backward()
    tm(_t(x)).sum().backward()
    for i in (0, 1):
        _close(getattr(em.parametrizations.weight, f"original{i}").grad,
               getattr(tm.parametrizations.weight, f"original{i}").grad)


def test_parametrized_orthogonal_matches_torch():
    em, tm = _same_linear(4, 3)
    ember.nn.utils.parametrizations.orthogonal(em)
    torch.nn.utils.parametrizations.orthogonal(tm)
    _close(em.weight, tm.weight, 1e-4)
    assert sorted(em.state_dict()) == sorted(tm.state_dict())


def test_fuse_conv_bn_eval_matches_torch():
    tc, tb = torch.nn.Conv2d(3, 4, 3).eval(), torch.nn.BatchNorm2d(4).eval()
    with torch.no_grad():
        tb.running_mean.uniform_()
        tb.running_var.uniform_(0.5, 2)
        tb.weight.uniform_()
        tb.bias.uniform_()
    ec, eb = ember.nn.Conv2d(3, 4, 3).eval(), ember.nn.BatchNorm2d(4).eval()
    ec.load_state_dict({k: _e(v.numpy()) for k, v in tc.state_dict().items()})
    eb.load_state_dict({k: _e(v.detach().numpy()) for k, v in tb.state_dict().items()})
    ef, tf = ember.nn.utils.fuse_conv_bn_eval(ec, eb), torch.nn.utils.fuse_conv_bn_eval(tc, tb)
    _close(ef.weight, tf.weight)
    _close(ef.bias, tf.bias)


def test_functional_call_matches_torch():
    em, tm = _same_linear(3, 2)
    w = np.random.default_rng(6).standard_normal((2, 3)).astype(np.float32)
    x = np.random.default_rng(7).standard_normal((4, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.nn.utils.stateless.functional_call(tm, {"weight": _t(w)}, (_t(x),))
    ours = ember.nn.utils.stateless.functional_call(em, {"weight": _e(w)}, (_e(x),))
    _close(ours, theirs)


@pytest.mark.parametrize("make", [
    lambda m: m.nn.ParameterList([m.nn.Parameter(m.ones(1))]),
    lambda m: m.nn.ParameterList([m.nn.Parameter(m.ones(1)), m.nn.Parameter(m.ones(2, 3))]),
    lambda m: m.nn.ParameterDict({"a": m.nn.Parameter(m.ones(1)),
                                  "b": m.nn.Parameter(m.ones(2, dtype=m.float64))}),
])
def test_parameter_container_repr_matches_torch(make):
    assert repr(make(ember)).replace("ember.", "torch.") == repr(make(torch))


def test_module_list_subclass_repr_uses_class_name():
    class Blocks(ember.nn.ModuleList):
        pass

    assert repr(Blocks([ember.nn.ReLU()])).startswith("Blocks(")

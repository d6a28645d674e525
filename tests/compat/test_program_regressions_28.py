"""Regressions found by running public-style PyTorch programs (tests/compat/
test_research_repos_7.py) unchanged under ``python -m ember.compat.run``: each test is a
minimal program of our own that reproduces one failure, checked against torch where torch is
installed."""

import pytest

import ember

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")


# -- an unsorted batch_first unpacking is contiguous, so dropout draws the same mask (NER) --

def _unpacked(lib, batch_first, enforce_sorted):
    rnn = lib.nn.utils.rnn
    lengths = [5, 4, 3] if enforce_sorted else [3, 5, 4]
    x = lib.arange(3 * 5 * 2, dtype=lib.float32).reshape(3, 5, 2)
    packed = rnn.pack_padded_sequence(x, lib.tensor(lengths), batch_first=True,
                                      enforce_sorted=enforce_sorted)
    out, got_lengths = rnn.pad_packed_sequence(packed, batch_first=batch_first)
    lib.manual_seed(0)
    mask = lib.nn.functional.dropout(lib.ones_like(out), 0.5)
    return out.stride(), out.tolist(), got_lengths.tolist(), mask.tolist()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pad_packed_sequence_layout_matches_torch(batch_first, enforce_sorted):
    strides, values, lengths, mask = _unpacked(ember, batch_first, enforce_sorted)
    assert strides == ((10, 2, 1) if batch_first and not enforce_sorted else
                       (2, 6, 1) if batch_first else (6, 2, 1))
    if HAS_TORCH:
        assert (strides, values, lengths, mask) == _unpacked(torch, batch_first, enforce_sorted)


# -- once_differentiable's error node has PyTorch's name and reaches only fresh leaves --

def _delayed_error(lib, how):
    from_fn = lib.autograd.function

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @from_fn.once_differentiable
        def backward(ctx, grad):
            return grad * 2

    x = lib.ones(2, requires_grad=True)
    g, = lib.autograd.grad((Twice.apply(x) ** 2).sum(), x, create_graph=True)
    node = g.grad_fn
    seen = (type(node).__name__, type(node).__module__, node.name(), g.requires_grad,
            [type(n).__name__ for n, _ in node.next_functions], repr(g))
    try:
        if how == "backward":
            g.sum().backward()
        else:
            lib.autograd.grad(g.sum(), x)
        return seen, None
    except RuntimeError as e:
        return seen, str(e)


@pytest.mark.parametrize("how", ["backward", "grad_wrt_input"])
def test_once_differentiable_error_node_matches_torch(how):
    seen, err = _delayed_error(ember, how)
    assert seen[:3] == ("Error", "builtins", "torch::autograd::Error")
    assert seen[4] == ["AccumulateGrad"]
    if how == "backward":
        assert "@once_differentiable" in err
    if HAS_TORCH:
        assert (seen, err) == _delayed_error(torch, how)


# -- functional_call names a missing submodule as PyTorch's member accessor does (SIREN) --

def _functional_call_error(lib, key):
    net = lib.nn.Sequential(lib.nn.Linear(2, 2))
    net.scale = 3.0
    try:
        lib.func.functional_call(net, {key: lib.zeros(2, 2)}, (lib.ones(1, 2),))
    except (AttributeError, TypeError) as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("key", ["net.0.weight", "0.missing.weight", "scale.weight"])
def test_functional_call_bad_path_matches_torch(key):
    got = _functional_call_error(ember, key)
    assert got is not None
    if HAS_TORCH:
        assert got == _functional_call_error(torch, key)

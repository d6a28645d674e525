"""RNN, LSTM, GRU and their cells against PyTorch, including packed sequences."""

import numpy as np
import pytest

import ember
from ember import nn
from tests.conftest import HAS_TORCH
from tests.nn._compare import compare, copy_weights, to_torch

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")


def _x(*shape, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape))


def _pair(name, *args, **kwargs):
    import torch

    t = getattr(torch.nn, name)(*args, **kwargs).double()
    e = getattr(nn, name)(*args, **kwargs).double()
    copy_weights(e, t)
    return e, t


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("kwargs", [{}, {"num_layers": 2, "bidirectional": True},
                                    {"batch_first": True, "bias": False}])
def test_recurrent_layer_matches_torch(name, kwargs, device):
    e, t = _pair(name, 3, 4, **kwargs)
    x = _x(2, 5, 3) if kwargs.get("batch_first") else _x(5, 2, 3)
    assert list(dict(e.named_parameters())) == list(dict(t.named_parameters()))
    e.to(device)
    compare(lambda x: e(x)[0], lambda x: t(x)[0], [x], ember_params=list(e.parameters()),
            torch_params=list(t.parameters()), device=device)


def test_lstm_with_initial_state_projection_and_final_state():
    import torch

    e, t = _pair("LSTM", 3, 5, num_layers=2, proj_size=2)
    x, h0, c0 = _x(4, 2, 3), _x(2, 2, 2, seed=1), _x(2, 2, 5, seed=2)
    out, (h, c) = e(x, (h0, c0))
    tout, (th, tc) = t(to_torch(x), (to_torch(h0), to_torch(c0)))
    for a, b in [(out, tout), (h, th), (c, tc)]:
        assert np.allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-10)
    (out.sum() + h.sum() + c.sum()).backward()
    (tout.sum() + th.sum() + tc.sum()).backward()
    for p, q in zip(e.parameters(), t.parameters()):
        assert np.allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-9)
    del torch


def test_unbatched_input():
    e, t = _pair("GRU", 3, 4)
    compare(lambda x: e(x)[0], lambda x: t(x)[0], [_x(5, 3)])


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_packed_sequences_match_torch(name):
    import torch
    from torch.nn.utils import rnn as trnn

    from ember.nn.utils import rnn as ernn

    e, t = _pair(name, 3, 4, bidirectional=True)
    seqs = [_x(n, 3, seed=n) for n in (5, 2, 4)]
    packed = ernn.pack_sequence(seqs, enforce_sorted=False)
    tpacked = trnn.pack_sequence([to_torch(s) for s in seqs], enforce_sorted=False)
    assert packed.batch_sizes.tolist() == tpacked.batch_sizes.tolist()
    out, hidden = e(packed)
    tout, thidden = t(tpacked)
    padded, lengths = ernn.pad_packed_sequence(out, batch_first=True)
    tpadded, tlengths = trnn.pad_packed_sequence(tout, batch_first=True)
    assert lengths.tolist() == tlengths.tolist()
    assert np.allclose(padded.detach().numpy(), tpadded.detach().numpy(), atol=1e-10)
    h = hidden[0] if name == "LSTM" else hidden
    th = thidden[0] if name == "LSTM" else thidden
    assert np.allclose(h.detach().numpy(), th.detach().numpy(), atol=1e-10)
    padded.sum().backward()
    tpadded.sum().backward()
    for p, q in zip(e.parameters(), t.parameters()):
        assert np.allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-9)
    del torch


def test_pad_sequence_and_pack_padded():
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

    seqs = [ember.ones(3, 2), ember.ones(1, 2) * 2]
    padded = pad_sequence(seqs, batch_first=True, padding_value=-1)
    assert padded.shape == (2, 3, 2) and padded[1, 2, 0].item() == -1
    packed = pack_padded_sequence(padded, [3, 1], batch_first=True)
    assert packed.batch_sizes.tolist() == [2, 1, 1]
    back, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1)
    assert back.tolist() == padded.tolist() and lengths.tolist() == [3, 1]
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_padded_sequence(padded, [1, 3], batch_first=True)


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(name):
    e, t = _pair(name, 3, 4)
    x = _x(2, 3)
    if name == "LSTMCell":
        h, c = _x(2, 4, seed=1), _x(2, 4, seed=2)
        compare(lambda x, h, c: e(x, (h, c)), lambda x, h, c: t(x, (h, c)), [x, h, c],
                ember_params=list(e.parameters()), torch_params=list(t.parameters()))
    else:
        compare(lambda x, h: e(x, h), lambda x, h: t(x, h), [x, _x(2, 4, seed=1)],
                ember_params=list(e.parameters()), torch_params=list(t.parameters()))


def test_lstm_double_backward_through_fused_step():
    from ember.autograd import gradcheck, gradgradcheck

    cell = nn.LSTMCell(2, 3).double()
    x = _x(2, 2).requires_grad_()
    h = _x(2, 3, seed=1).requires_grad_()
    c = _x(2, 3, seed=2).requires_grad_()
    fn = lambda x, h, c: cell(x, (h, c))  # noqa: E731
    assert gradcheck(fn, (x, h, c))
    assert gradgradcheck(fn, (x, h, c))


def test_rnn_errors():
    lstm = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input_size"):
        lstm(ember.zeros(5, 2, 7))
    with pytest.raises(RuntimeError,
                       match=r"Expected hidden\[0\] size \(1, 2, 4\), got \[2, 2, 4\]"):
        lstm(ember.zeros(5, 2, 3), (ember.zeros(2, 2, 4), ember.zeros(1, 2, 4)))
    for x in (ember.zeros(0, 2, 3), ember.zeros(0, 3)):
        with pytest.raises(RuntimeError, match="sequence length"):
            lstm(x)
    with pytest.raises(RuntimeError, match="sequence length"):
        nn.GRU(3, 4, batch_first=True)(ember.zeros(2, 0, 3))
    with pytest.raises(ValueError, match="proj_size"):
        nn.GRU(3, 4, proj_size=2)


def test_fused_lstm_layer_gradcheck_and_double_backward():
    from ember.autograd import gradcheck, gradgradcheck

    lstm = nn.LSTM(2, 3, proj_size=2).double()
    x = _x(4, 2, 2).requires_grad_()
    h0 = _x(1, 2, 2, seed=1).requires_grad_()
    c0 = _x(1, 2, 3, seed=2).requires_grad_()

    def fn(x, h0, c0):
        out, (h, c) = lstm(x, (h0, c0))
        return out, h, c

    assert gradcheck(fn, (x, h0, c0))
    assert gradgradcheck(fn, (x, h0, c0))

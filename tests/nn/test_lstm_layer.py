"""The fused LSTM layer op (NOTE [ Fused LSTM layer ]): gradients of every input in both
directions, with and without bias and projection, and under create_graph."""

import numpy as np
import pytest

import ember
from ember._ops import nn_rnn
from ember.autograd import gradcheck, gradgradcheck


def _t(*shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape) * 0.7
    return ember.from_numpy(a).requires_grad_()


def _inputs(proj, bias, steps=4, batch=2, inp=3, hidden=3):
    p = 2 if proj else hidden
    return (_t(steps, batch, inp, seed=0), _t(4 * hidden, inp, seed=1),
            _t(4 * hidden, seed=2) if bias else None, _t(batch, p, seed=3),
            _t(batch, hidden, seed=4), _t(4 * hidden, p, seed=5),
            _t(p, hidden, seed=6) if proj else None)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("proj,bias", [(False, True), (True, True), (False, False)])
def test_gradients_of_every_input(reverse, proj, bias):
    args = _inputs(proj, bias)
    present = [i for i, a in enumerate(args) if a is not None]

    def fn(*ts):
        full = list(args)
        for i, t in zip(present, ts):
            full[i] = t
        return nn_rnn.lstm_layer(*full, reverse=reverse)

    assert gradcheck(fn, [args[i] for i in present])


@pytest.mark.parametrize("reverse", [False, True])
def test_double_backward(reverse):
    x, w_ih, b, h0, c0, w_hh, _ = _inputs(False, True, steps=3)
    fn = lambda x, w_hh, c0: nn_rnn.lstm_layer(x, w_ih, b, h0, c0, w_hh,  # noqa: E731
                                                reverse=reverse)
    assert gradgradcheck(fn, (x, w_hh, c0))


@pytest.mark.parametrize("reverse", [False, True])
def test_matches_the_per_step_recurrence(reverse):
    x, w_ih, b, h0, c0, w_hh, w_hr = _inputs(True, True, steps=5)
    out, h, c = nn_rnn.lstm_layer(x, w_ih, b, h0, c0, w_hh, w_hr, reverse=reverse)
    ref_out, ref_h, ref_c = nn_rnn._lstm_layer_replay(x, w_ih, b, h0, c0, w_hh, w_hr, reverse)
    for got, want in ((out, ref_out), (h, ref_h), (c, ref_c)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    # the final state is the state after the last step processed
    last = 0 if reverse else -1
    np.testing.assert_array_equal(h.detach().numpy(), out[last].detach().numpy())


def test_gradient_only_where_needed():
    x, w_ih, b, h0, c0, w_hh, _ = _inputs(False, True)
    x = x.detach()
    out, _, _ = nn_rnn.lstm_layer(x, w_ih, b, h0.detach(), c0.detach(), w_hh)
    out.sum().backward()
    assert x.grad is None and w_ih.grad is not None and b.grad is not None

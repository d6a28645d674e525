"""Two stacked LSTM layers side by side on two threads (NOTE [ LSTM layers in a wavefront ] in
ember/_ops/_lstm_wavefront.py): outputs and every gradient against the layers run one after
the other and against PyTorch; where the wavefront is and is not taken; its fallbacks."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._kernels import _mlas
from ember._ops import _lstm_directions, _lstm_mlas, _lstm_wavefront, nn_rnn

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("numba")


@pytest.fixture
def wavefront(monkeypatch):
    """MLAS chosen, two threads, the load check quiet: where the wavefront applies."""
    monkeypatch.setattr(_mlas, "_state", [ort])
    # the small layers below take MLAS's step products whatever their size (NOTE [ Small
    # LSTMs keep NumPy's step products ] in ember/_ops/_lstm_mlas.py)
    monkeypatch.setattr(_lstm_mlas, "STEP_MIN_WORK", [0])
    monkeypatch.setattr(_lstm_mlas, "STEP_PACK_MIN_WORK", [0])
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [True])
    # no OpenBLAS workers polling after a two-thread product, which makes the pool decline
    # (NOTE [ Pieces and the BLAS workers ] in ember/_parallel.py)
    monkeypatch.setattr(_parallel, "blas_split", lambda now=None: None)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _make(fw, kw, inp=24, hidden=32, seed=0):
    lstm = fw.nn.LSTM(inp, hidden, **kw)
    rng = np.random.default_rng(seed)
    with fw.no_grad():
        for p in lstm.parameters():
            p.copy_(fw.tensor(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
    return lstm


def _run(fw, lstm, x, h0c0=None, emb=None):
    """Outputs and gradients (input or table, parameters, given states), as float64."""
    if emb is None:
        x = fw.tensor(x, requires_grad=True)
        inp = x
    else:
        inp = emb(fw.tensor(x))
    state = None if h0c0 is None else tuple(fw.tensor(s, requires_grad=True) for s in h0c0)
    out, (h, c) = lstm(inp, state)
    (out.sum() + (out * out).sum() * 0.5 + (h * h).sum() + (c * c).sum() * 0.3).backward()
    got = [out, h, c, x.grad if emb is None else emb.weight.grad]
    got += [p.grad if p.grad is not None else fw.zeros(p.shape) for p in lstm.parameters()]
    if state is not None:
        got += [s.grad for s in state]
    return [t.detach().numpy().astype(np.float64) for t in got]


def _close(a, b, tol=2e-5):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        scale = max(float(np.abs(v).max()), 1.0)
        np.testing.assert_allclose(u, v, rtol=0, atol=tol * scale)


def _both(monkeypatch, make, *args, **kwargs):
    """The run with the wavefront op and without; asserts the first one took it."""
    taken = sum(_lstm_wavefront.COUNTS)
    got = _run(ember, make(), *args, **kwargs)
    assert sum(_lstm_wavefront.COUNTS) > taken
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    taken = _lstm_wavefront.COUNTS[:]
    want = _run(ember, make(), *args, **kwargs)
    assert _lstm_wavefront.COUNTS == taken
    return got, want


CASES = [dict(num_layers=2), dict(num_layers=2, bias=False),
         dict(num_layers=2, batch_first=True), dict(num_layers=3),
         dict(num_layers=4, batch_first=True), dict(num_layers=2, dropout=0.5)]


@pytest.mark.parametrize("kw", CASES)
@pytest.mark.parametrize("steps", [16, 37])
@pytest.mark.parametrize("given_state", [False, True])
def test_wavefront_matches_layers_one_after_the_other(wavefront, monkeypatch, kw, steps,
                                                     given_state):
    rng = np.random.default_rng(1)
    batch = 5
    shape = (batch, steps, 24) if kw.get("batch_first") else (steps, batch, 24)
    x = rng.standard_normal(shape).astype(np.float32)
    h0c0 = None
    if given_state:
        h0c0 = tuple(rng.standard_normal((kw["num_layers"], batch, 32)).astype(np.float32)
                     for _ in range(2))

    def make():
        lstm = _make(ember, kw)
        lstm.eval()   # (dropout between the layers only in training)
        return lstm

    ran = _lstm_wavefront.COUNTS[0]
    got, want = _both(monkeypatch, make, x, h0c0)
    assert _lstm_wavefront.COUNTS[0] > ran   # on two threads
    _close(got, want)


def test_wavefront_matches_torch(wavefront):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((6, 41, 24)).astype(np.float32)
    h0c0 = tuple(rng.standard_normal((3, 6, 32)).astype(np.float32) for _ in range(2))
    kw = dict(num_layers=3, batch_first=True)
    taken = _lstm_wavefront.COUNTS[0]
    got = _run(ember, _make(ember, kw), x, h0c0)
    assert _lstm_wavefront.COUNTS[0] == taken + 1
    want = _run(torch, _make(torch, kw), x, h0c0)
    _close(got, want, tol=1e-4)


@pytest.mark.parametrize("scale_grad_by_freq", [False, True])
def test_wavefront_fed_by_an_embedding(wavefront, monkeypatch, scale_grad_by_freq):
    # the table's gradient through the first layer's folded lookup (NOTE [ An unobserved
    # lookup's gradient ] in nn_rnn.py)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 50, (4, 33))

    def make():
        ember.manual_seed(0)
        emb = ember.nn.Embedding(50, 24, scale_grad_by_freq=scale_grad_by_freq)
        lstm = _make(ember, dict(num_layers=2, batch_first=True))
        make.emb = emb
        return lstm

    taken = _lstm_wavefront.COUNTS[0]
    got = _run(ember, make(), idx, emb=make.emb)
    assert _lstm_wavefront.COUNTS[0] == taken + 1
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    want = _run(ember, make(), idx, emb=make.emb)
    _close(got, want)


@pytest.mark.parametrize("kw", [dict(num_layers=2, proj_size=16), dict(num_layers=1),
                                dict(bidirectional=True, proj_size=16)])
def test_wavefront_not_taken_for_other_stacks(wavefront, kw):
    lstm = _make(ember, kw)
    x = np.random.default_rng(4).standard_normal((20, 3, 24)).astype(np.float32)
    taken = _lstm_wavefront.COUNTS[:]
    _run(ember, lstm, x)
    assert _lstm_wavefront.COUNTS == taken


@pytest.mark.parametrize("kw", [dict(num_layers=2, dropout=0.4),
                                dict(num_layers=4, dropout=0.3, batch_first=True),
                                dict(num_layers=3, dropout=0.5)])
def test_wavefront_with_dropout_in_training_matches(wavefront, monkeypatch, kw):
    # the mask between the paired layers is drawn where F.dropout would draw it: the same
    # masks from the same seed, and the same gradients through them
    shape = (3, 20, 24) if kw.get("batch_first") else (20, 3, 24)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)

    def run():
        lstm = _make(ember, kw)
        ember.manual_seed(3)
        got = _run(ember, lstm, x)
        return got + [ember.rand(3).numpy().astype(np.float64)]   # (the stream after)

    ran = _lstm_wavefront.COUNTS[0]
    got = run()
    assert _lstm_wavefront.COUNTS[0] > ran
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    _close(got, run())


def test_wavefront_dropout_only_in_training(wavefront):
    lstm = _make(ember, dict(num_layers=2, dropout=0.25))
    x = ember.tensor(np.random.default_rng(5).standard_normal((18, 4, 24)).astype(np.float32))
    ember.manual_seed(0)
    ran = _lstm_wavefront.COUNTS[0]
    train = lstm(x)[0]
    lstm.eval()
    test = lstm(x)[0]
    assert _lstm_wavefront.COUNTS[0] == ran + 2
    assert not np.allclose(train.detach().numpy(), test.detach().numpy())
    lstm.dropout = 0.0
    lstm.train()
    np.testing.assert_array_equal(lstm(x)[0].detach().numpy(), test.detach().numpy())


def test_wavefront_not_taken_for_short_sequences_or_other_thread_counts(wavefront):
    lstm = _make(ember, dict(num_layers=2))
    x = np.random.default_rng(4).standard_normal((2 * _lstm_wavefront.CHUNK[0] - 1, 3, 24))
    taken = _lstm_wavefront.COUNTS[:]
    _run(ember, lstm, x.astype(np.float32))
    for threads in (1, 3):   # (with more than two, the plain path's products use them all)
        ember.set_num_threads(threads)
        _run(ember, lstm, np.concatenate([x, x]).astype(np.float32))
    assert _lstm_wavefront.COUNTS == taken


def test_wavefront_not_taken_without_mlas(wavefront, monkeypatch):
    monkeypatch.setattr(_mlas, "_state", [False])
    lstm = _make(ember, dict(num_layers=2))
    x = np.random.default_rng(4).standard_normal((20, 3, 24)).astype(np.float32)
    taken = _lstm_wavefront.COUNTS[:]
    _run(ember, lstm, x)
    assert _lstm_wavefront.COUNTS == taken


def test_gru_stacks_untouched(wavefront, monkeypatch):
    calls = []
    monkeypatch.setattr(_lstm_wavefront, "lstm_pair", lambda *a: calls.append(a))
    gru = ember.nn.GRU(24, 32, num_layers=2)
    out, h = gru(ember.randn(20, 3, 24))
    assert calls == [] and tuple(out.shape) == (20, 3, 32)


def test_wavefront_on_one_thread_when_the_pool_declines(wavefront, monkeypatch):
    # the layers one after the other inside the same op (the pool's worker taken)
    monkeypatch.setattr(_lstm_wavefront, "_on_two_threads", lambda first, second: False)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((21, 4, 24)).astype(np.float32)
    fell = _lstm_wavefront.COUNTS[1]
    got, want = _both(monkeypatch, lambda: _make(ember, dict(num_layers=2)), x)
    assert _lstm_wavefront.COUNTS[1] == fell + 1
    _close(got, want)


def test_wavefront_error_in_a_layer_reaches_the_caller(wavefront, monkeypatch):
    # an error on the worker's layer releases the other layer's waits instead of hanging
    steps = nn_rnn._lstm_layer_steps

    def failing(*args, after=None, **kw):
        if after is not None:
            raise ValueError("layer 0 failed")
        return steps(*args, after=after, **kw)

    monkeypatch.setattr(nn_rnn, "_lstm_layer_steps", failing)
    lstm = _make(ember, dict(num_layers=2))
    with pytest.raises((ValueError, RuntimeError)) as info:
        lstm(ember.randn(20, 3, 24))
    error = info.value
    assert "layer 0 failed" in str(error) + str(error.__cause__)


def test_wavefront_double_backward_matches(wavefront, monkeypatch):
    rng = np.random.default_rng(6)
    x0 = rng.standard_normal((17, 2, 24)).astype(np.float32)

    def grad_of_grad():
        lstm = _make(ember, dict(num_layers=2))
        x = ember.tensor(x0, requires_grad=True)
        out, _ = lstm(x)
        (g,) = ember.autograd.grad((out * out).sum(), x, create_graph=True)
        (gg,) = ember.autograd.grad((g * g).sum(), x)
        return [out.detach().numpy(), g.detach().numpy(), gg.numpy()]

    taken = _lstm_wavefront.COUNTS[0]
    got = grad_of_grad()
    assert _lstm_wavefront.COUNTS[0] == taken + 1
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    _close(got, grad_of_grad(), tol=1e-4)


def test_wavefront_forward_mode_matches(wavefront):
    # the pair op's tangents (its replay) against two one-layer ops'
    import ember.autograd.forward_ad as fwAD

    rng = np.random.default_rng(7)
    x0, t0 = (ember.tensor(rng.standard_normal((17, 2, 24)).astype(np.float32))
              for _ in range(2))
    lstm = _make(ember, dict(num_layers=2))
    layers = [lstm._weights(k, 0)[:4] for k in range(2)]
    zero = ember.zeros(2, 32)
    with fwAD.dual_level():
        x = fwAD.make_dual(x0, t0)
        out, s0, s1 = _lstm_wavefront.lstm_pair(x, layers[0] + (zero, zero),
                                                layers[1] + (zero, zero))
        got = [fwAD.unpack_dual(t).tangent for t in (out, *s0, *s1)]
        (w_ih, w_hh, b_ih, b_hh), (v_ih, v_hh, c_ih, c_hh) = layers
        o0, h0, c0 = nn_rnn.lstm_layer(x, w_ih, b_ih, zero, zero, w_hh, b_hh=b_hh)
        o1, h1, c1 = nn_rnn.lstm_layer(o0, v_ih, c_ih, zero, zero, v_hh, b_hh=c_hh)
        want = [fwAD.unpack_dual(t).tangent for t in (o1, h0, c0, h1, c1)]
    _close([t.detach().numpy() for t in got], [t.detach().numpy() for t in want], tol=1e-4)


def test_wavefront_without_grad_matches(wavefront, monkeypatch):
    x = ember.tensor(np.random.default_rng(8).standard_normal((19, 3, 24)).astype(np.float32))
    lstm = _make(ember, dict(num_layers=2))
    with ember.no_grad():
        got = [t.numpy().copy() for t in (lstm(x)[0], *lstm(x)[1])]
        monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
        want = [t.numpy().copy() for t in (lstm(x)[0], *lstm(x)[1])]
    _close(got, want)


# -- the two directions of a bidirectional layer (NOTE [ LSTM directions on two threads ]) --

BIDIR = [dict(num_layers=1, bidirectional=True), dict(num_layers=2, bidirectional=True),
         dict(num_layers=2, bidirectional=True, batch_first=True, bias=False),
         dict(num_layers=3, bidirectional=True, dropout=0.3)]


@pytest.mark.parametrize("kw", BIDIR)
@pytest.mark.parametrize("given_state", [False, True])
def test_directions_on_two_threads_match_one_after_the_other(wavefront, monkeypatch, kw,
                                                              given_state):
    rng = np.random.default_rng(9)
    steps, batch = 19, 4
    shape = (batch, steps, 24) if kw.get("batch_first") else (steps, batch, 24)
    x = rng.standard_normal(shape).astype(np.float32)
    h0c0 = None
    if given_state:
        h0c0 = tuple(rng.standard_normal((2 * kw["num_layers"], batch, 32)).astype(np.float32)
                     for _ in range(2))

    def make():
        lstm = _make(ember, kw)
        lstm.eval()
        return lstm

    ran = _lstm_wavefront.COUNTS[0]
    got, want = _both(monkeypatch, make, x, h0c0)
    assert _lstm_wavefront.COUNTS[0] >= ran + kw["num_layers"]
    _close(got, want)


def test_directions_on_two_threads_match_torch(wavefront):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    x = rng.standard_normal((5, 23, 24)).astype(np.float32)
    h0c0 = tuple(rng.standard_normal((4, 5, 32)).astype(np.float32) for _ in range(2))
    kw = dict(num_layers=2, batch_first=True, bidirectional=True)
    taken = _lstm_wavefront.COUNTS[0]
    got = _run(ember, _make(ember, kw), x, h0c0)
    assert _lstm_wavefront.COUNTS[0] == taken + 2
    want = _run(torch, _make(torch, kw), x, h0c0)
    _close(got, want, tol=1e-4)


def test_directions_with_dropout_in_training_match(wavefront, monkeypatch):
    # dropout between the layers stays between the ops: the same masks from the same seed
    x = np.random.default_rng(11).standard_normal((18, 3, 24)).astype(np.float32)

    def run():
        lstm = _make(ember, dict(num_layers=2, bidirectional=True, dropout=0.4))
        ember.manual_seed(5)
        return _run(ember, lstm, x)

    taken = _lstm_wavefront.COUNTS[0]
    got = run()
    assert _lstm_wavefront.COUNTS[0] == taken + 2
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    _close(got, run())


def test_directions_fed_by_an_embedding(wavefront, monkeypatch):
    idx = np.random.default_rng(12).integers(0, 50, (4, 20))

    def make():
        ember.manual_seed(0)
        make.emb = ember.nn.Embedding(50, 24)
        return _make(ember, dict(num_layers=1, bidirectional=True, batch_first=True))

    taken = _lstm_wavefront.COUNTS[0]
    got = _run(ember, make(), idx, emb=make.emb)
    assert _lstm_wavefront.COUNTS[0] == taken + 1
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    want = _run(ember, make(), idx, emb=make.emb)
    _close(got, want)


def test_directions_on_one_thread_when_the_pool_declines(wavefront, monkeypatch):
    monkeypatch.setattr(_lstm_wavefront, "_on_two_threads", lambda first, second: False)
    x = np.random.default_rng(13).standard_normal((17, 2, 24)).astype(np.float32)
    fell = _lstm_wavefront.COUNTS[1]
    got, want = _both(monkeypatch, lambda: _make(ember, dict(bidirectional=True)), x)
    assert _lstm_wavefront.COUNTS[1] == fell + 1
    _close(got, want)


def test_directions_double_backward_matches(wavefront, monkeypatch):
    rng = np.random.default_rng(14)
    x0 = rng.standard_normal((17, 2, 24)).astype(np.float32)
    lstm = _make(ember, dict(bidirectional=True))

    def grad_of_grad():
        x = ember.tensor(x0, requires_grad=True)
        out, _ = lstm(x)
        (g,) = ember.autograd.grad((out * out).sum(), x, create_graph=True)
        (gg,) = ember.autograd.grad((g * g).sum(), x)
        return [out.detach().numpy(), g.detach().numpy(), gg.numpy()]

    taken = _lstm_wavefront.COUNTS[0]
    got = grad_of_grad()
    assert _lstm_wavefront.COUNTS[0] == taken + 1
    monkeypatch.setattr(_lstm_wavefront, "ENABLED", [False])
    _close(got, grad_of_grad(), tol=1e-4)


def test_directions_forward_mode_matches(wavefront):
    # the op's tangents (its replay) against two one-layer ops' side by side
    import ember.autograd.forward_ad as fwAD

    rng = np.random.default_rng(15)
    x0, t0 = (ember.tensor(rng.standard_normal((17, 2, 24)).astype(np.float32))
              for _ in range(2))
    lstm = _make(ember, dict(bidirectional=True))
    zero = ember.zeros(2, 32)
    dirs = [lstm._weights(0, d)[:4] for d in range(2)]
    with fwAD.dual_level():
        x = fwAD.make_dual(x0, t0)
        out, f, r = _lstm_directions.lstm_bidir(x, dirs[0] + (zero, zero),
                                               dirs[1] + (zero, zero))
        got = [fwAD.unpack_dual(t).tangent for t in (out, *f, *r)]
        want = []
        for d, (w_ih, w_hh, b_ih, b_hh) in enumerate(dirs):
            want.append(nn_rnn.lstm_layer(x, w_ih, b_ih, zero, zero, w_hh, reverse=bool(d),
                                          b_hh=b_hh))
        outs = ember.cat([want[0][0], want[1][0]], 2)
        want = [fwAD.unpack_dual(t).tangent for t in (outs, *want[0][1:], *want[1][1:])]
    _close([t.detach().numpy() for t in got], [t.detach().numpy() for t in want], tol=1e-4)


def test_wavefront_with_dropout_matches_torch(wavefront):
    # ember's Bernoulli stream is PyTorch's: the same masks between the layers
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(16)
    x = rng.standard_normal((24, 3, 24)).astype(np.float32)
    kw = dict(num_layers=2, dropout=0.3)
    ran = _lstm_wavefront.COUNTS[0]
    ember.manual_seed(7)
    got = _run(ember, _make(ember, kw), x)
    assert _lstm_wavefront.COUNTS[0] == ran + 1
    torch.manual_seed(7)
    want = _run(torch, _make(torch, kw), x)
    _close(got, want, tol=1e-4)

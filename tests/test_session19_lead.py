"""Regressions found by trying programs as a new user would (session 19)."""

import ember


def test_subclass_defined_by_exec_keeps_its_type():
    # a class defined by ``exec`` without ``__name__`` in its globals lives in ``builtins``;
    # it takes part in ``__torch_function__`` as a class from any other module does
    env = {"torch": ember}
    exec(
        "class MyT(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n"
        "class Plain(torch.Tensor):\n"
        "    pass\n", env)
    my_t, plain = env["MyT"], env["Plain"]
    assert my_t.__module__ == "builtins"
    t = ember.ones(2).as_subclass(my_t)
    assert type(t + 1) is my_t
    assert type(t.sum()) is my_t
    assert type(ember.add(t, 1)) is my_t
    assert type(t[0]) is my_t
    p = ember.ones(2).as_subclass(plain)
    assert type(p * 2) is plain


# -- gamma-family draws on PyTorch's stream ----------------------------------------------------

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from ember import _kernels  # noqa: E402


def _draws(lib, dt):
    lib.manual_seed(7)
    lib.randn(1)  # leave a Box-Muller value waiting in the generator
    d = lib.distributions
    f = getattr(lib, dt)
    rate = lib.tensor(2.0, dtype=f)
    out = [d.Gamma(lib.tensor([2.0, 0.5, 7.3, 1e-3], dtype=f), rate).sample((3,)),
           d.Dirichlet(lib.tensor([2.0, 3.0, 0.2], dtype=f)).sample((2,)),
           d.Beta(lib.tensor(2.0, dtype=f), lib.tensor(3.0, dtype=f)).rsample((4,)),
           d.Chi2(lib.tensor([3.0], dtype=f)).sample(),
           d.StudentT(lib.tensor([3.0], dtype=f)).sample(),
           lib._standard_gamma(lib.tensor([0.0, -1.0, float("nan"), float("inf"), 4.0], dtype=f)),
           lib.randn(5, dtype=f)]  # the stream afterwards
    return [o.numpy() for o in out]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_gamma_family_draws_are_torchs(dt, backend):
    torch = pytest.importorskip("torch")
    if backend == "numba":
        pytest.importorskip("numba")
    old = _kernels.set_backend(backend)
    try:
        mine = _draws(ember, dt)
    finally:
        _kernels.set_backend(old)
    theirs = _draws(torch, dt)
    for m, t in zip(mine, theirs):
        if dt == "float64":
            np.testing.assert_array_equal(m, t)  # bit for bit
        else:  # a few units in the last place; the stream after them the same
            np.testing.assert_allclose(m, t, rtol=4e-6, atol=0)
    np.testing.assert_array_equal(mine[-1], theirs[-1])


def test_gamma_half_precision_raises_as_torch():
    with pytest.raises(NotImplementedError, match="gamma_cpu"):
        ember._standard_gamma(ember.tensor([2.0], dtype=ember.float16))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dt", ["float64", "float32", "float16"])
def test_poisson_draws_are_torchs(dt, backend):
    torch = pytest.importorskip("torch")
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(3)
    # Knuth's products below 10, PTRS from 10, nothing for 0, counts past int64
    lam = np.concatenate([rng.uniform(0, 30, 40), rng.uniform(0, 1e6, 5),
                          [0.0, 10.0, 9.999, 1e-30, np.inf, 1e30]])
    rng.shuffle(lam)

    def draws(lib):
        lib.manual_seed(11)
        x = lib.poisson(lib.tensor(lam).to(getattr(lib, dt)))
        g = lib.Generator().manual_seed(5)
        y = lib.poisson(lib.tensor([3.0, 30.0]), generator=g)
        return x.double().numpy(), y.numpy(), lib.rand(4).numpy()

    old = _kernels.set_backend(backend)
    try:
        mine = draws(ember)
    finally:
        _kernels.set_backend(old)
    for m, t in zip(mine, draws(torch)):
        np.testing.assert_array_equal(m, t)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dt", ["float64", "float32"])
def test_binomial_draws_are_torchs(dt, backend):
    torch = pytest.importorskip("torch")
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(4)
    # inversion below n q = 10, BTRS from 10, flipped above p = 1/2, the edges
    n = np.concatenate([rng.integers(0, 3000, 60), [0, 5, 7, 3, 2.5, -1, np.inf]])
    p = np.concatenate([rng.uniform(0, 1, 60), [0.5, 0.0, 1.0, 0.999, 0.5, 0.5, 0.3]])
    p[7] = np.nan

    def draws(lib):
        lib.manual_seed(13)
        f = getattr(lib, dt)
        x = lib.binomial(lib.tensor(n).to(f), lib.tensor(p).to(f))
        y = lib.distributions.Binomial(50, lib.tensor([0.2, 0.9])).sample((3,))
        return x.double().numpy(), y.numpy(), lib.rand(4).numpy()

    old = _kernels.set_backend(backend)
    try:
        mine = draws(ember)
    finally:
        _kernels.set_backend(old)
    for m, t in zip(mine, draws(torch)):
        np.testing.assert_array_equal(m, t)


def test_binomial_checks_as_torch():
    with pytest.raises(RuntimeError, match="Found dtype Float but expected Double"):
        ember.binomial(ember.tensor([5.0], dtype=ember.float64), ember.tensor([0.5]))
    with pytest.raises(NotImplementedError, match="binomial_cpu"):
        ember.binomial(ember.tensor([5.0], dtype=ember.float16),
                       ember.tensor([0.5], dtype=ember.float16))
    with pytest.warns(UserWarning, match="was resized"):
        r = ember.binomial(ember.tensor([[5.0], [6.0]]), ember.tensor([0.5, 0.2]))
    assert r.shape == (2, 2)


def test_von_mises_draws_are_torchs():
    torch = pytest.importorskip("torch")

    def draws(lib):
        lib.manual_seed(3)
        d = lib.distributions.VonMises(lib.tensor([0.5, -1.0, 2.0]), lib.tensor([0.1, 4.0, 1e-6]))
        e = lib.distributions.VonMises(lib.tensor(0.3, dtype=lib.float64),
                                       lib.tensor(50.0, dtype=lib.float64))
        return d.sample((2,)).numpy(), e.sample((3,)).numpy(), lib.rand(4).numpy()

    for m, t in zip(draws(ember), draws(torch)):
        np.testing.assert_allclose(m, t, rtol=1e-6, atol=1e-7)


def test_wishart_draws_are_torchs():
    torch = pytest.importorskip("torch")

    def draws(lib):
        d = lib.distributions
        out = []
        for df, scale, shape in ((3.0, lib.eye(2), ()), ([3.0, 5.0], lib.eye(2), (2,)),
                                 (2.5, lib.eye(3) * 2, (3,))):
            lib.manual_seed(0)
            with pytest.warns(UserWarning, match="Singular sample detected"):
                out.append(d.Wishart(lib.tensor(df), scale).rsample(shape).numpy())
            out.append(lib.rand(3).numpy())  # the stream afterwards
        return out

    for m, t in zip(draws(ember), draws(torch)):
        np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-6)


# -- TransformerEncoder's padded positions in inference ----------------------------------------

def _encoder_outputs(lib, state=None):
    import warnings as _w

    lib.manual_seed(0)
    nn = lib.nn
    out = []

    def enc(norm=False, nhead=2):
        layer = nn.TransformerEncoderLayer(8, nhead, 16, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8) if norm else None)

    x = lib.tensor(np.random.default_rng(0).standard_normal((3, 5, 8)).astype(np.float32))
    left = lib.tensor([[False, False, False, True, True], [False] * 5, [False] + [True] * 4])
    notleft = lib.tensor([[False, True, False, True, True], [False] * 5, [False] * 5])
    cases = [(enc(), left, lib.no_grad, True), (enc(norm=True), left, lib.no_grad, True),
             (enc(), left, lib.enable_grad, True), (enc(), left, lib.no_grad, False),
             (enc(), notleft, lib.no_grad, True), (enc(nhead=1), left, lib.no_grad, True),
             (enc(), lib.where(left, float("-inf"), 0.0), lib.no_grad, True)]
    for e, mask, ctx, ev in cases:
        e.train(not ev)
        with _w.catch_warnings():
            _w.simplefilter("ignore")
            with ctx():
                out.append(e(x, src_key_padding_mask=mask).detach().numpy())
    return out


def test_transformer_encoder_zeroes_padded_positions_in_inference_as_torch():
    torch = pytest.importorskip("torch")
    mine, theirs = _encoder_outputs(ember), _encoder_outputs(torch)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m, t, rtol=1e-4, atol=1e-5)
    assert np.abs(mine[0][0, 3:]).max() == 0.0  # packed path: zeros at the padding
    assert np.abs(mine[3][0, 3:]).max() > 0.0  # training: values there


def test_anomaly_nan_check_warns_with_the_users_forward_line():
    import warnings

    x = ember.tensor([-1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="SqrtBackward0' returned nan"):
            with ember.autograd.detect_anomaly():
                y = x.sqrt()  # the line the warning must show
                y.backward()
    (w,) = [c for c in caught if "Error detected in SqrtBackward0" in str(c.message)]
    text = str(w.message)
    assert "y = x.sqrt()  # the line the warning must show" in text
    assert "_ops" not in text and "ember wrapper" not in text  # no ember internals


def _attention_rows(lib):
    import warnings as _w

    lib.manual_seed(0)
    m = lib.nn.MultiheadAttention(8, 2, batch_first=True)
    x = lib.tensor(np.random.default_rng(1).standard_normal((3, 5, 8)).astype(np.float32))
    kpm = lib.tensor([[False, False, False, True, True], [True] * 5, [False] * 5])
    am = lib.zeros(5, 5, dtype=lib.bool)
    am[2] = True  # query 2 sees no key
    out = []
    for train in (True, False):
        m.train(train)
        for grad in (True, False):
            with lib.set_grad_enabled(grad), _w.catch_warnings():
                _w.simplefilter("ignore")
                for nw in (True, False):
                    out.append(m(x, x, x, key_padding_mask=kpm, need_weights=nw)[0])
                out.append(m(x, x, x, attn_mask=am, need_weights=False)[0])
                out.append(m(x, x, x, attn_mask=lib.where(am, float("-inf"), 0.0),
                             need_weights=False)[0])
                out.append(m(x, x.clone(), x.clone(), key_padding_mask=kpm,
                             need_weights=False)[0])
    return [o.detach().numpy() for o in out]


def test_attention_rows_with_no_key_as_torch():
    torch = pytest.importorskip("torch")
    for m, t in zip(_attention_rows(ember), _attention_rows(torch)):
        np.testing.assert_allclose(m, t, rtol=1e-4, atol=1e-5)  # NaN where torch's are


def _layer_rows(lib):
    lib.manual_seed(0)
    x = lib.tensor(np.random.default_rng(2).standard_normal((3, 5, 8)).astype(np.float32))
    kpm = lib.tensor([[False, False, False, True, True], [True] * 5, [False] * 5])
    am = lib.zeros(5, 5, dtype=lib.bool)
    am[2] = True
    out = []
    for norm_first in (False, True):
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                               norm_first=norm_first)
        for train in (False, True):
            layer.train(train)
            with lib.no_grad():
                for kw in (dict(src_key_padding_mask=kpm),
                           dict(src_key_padding_mask=lib.where(kpm, float("-inf"), 0.0)),
                           dict(src_mask=am), dict(src_key_padding_mask=kpm, src_mask=am)):
                    out.append(layer(x, **kw).numpy())
    return out


def test_encoder_layer_rows_with_no_key_as_torch():
    torch = pytest.importorskip("torch")
    for m, t in zip(_layer_rows(ember), _layer_rows(torch)):
        np.testing.assert_allclose(m, t, rtol=1e-4, atol=1e-5)


def test_lstm_projection_warns_once_as_torchs_cpu_build():
    import warnings

    from ember.nn.modules import rnn

    rnn._projection_warned[0] = False
    lstm = ember.nn.LSTM(4, 5, proj_size=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lstm(ember.randn(2, 1, 4))
        lstm(ember.randn(2, 1, 4))
        ember.nn.LSTM(4, 5, proj_size=3).double()(ember.randn(2, 1, 4, dtype=ember.float64))
    texts = [str(c.message) for c in caught if "projections" in str(c.message)]
    assert texts == ["LSTM with projections is not supported with oneDNN. Using default "
                     "implementation."]


def test_stft_real_pairs_and_torch_named_messages():
    import warnings

    x = ember.tensor(np.random.default_rng(0).standard_normal(64).astype(np.float32))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = ember.stft(x, 16, window=ember.hann_window(16), return_complex=False)
    assert r.shape == (9, 17, 2) and r.dtype == ember.float32
    c = ember.stft(x, 16, window=ember.hann_window(16), return_complex=True)
    np.testing.assert_array_equal(r.numpy(), ember.view_as_real(c).numpy())
    assert any("return_complex=False is deprecated" in str(w.message) for w in caught)
    torch = pytest.importorskip("torch")
    t = torch.stft(torch.tensor(x.numpy()), 16, window=torch.hann_window(16),
                   return_complex=False)
    np.testing.assert_allclose(r.numpy(), t.numpy(), rtol=1e-4, atol=1e-5)

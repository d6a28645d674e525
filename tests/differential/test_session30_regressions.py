"""Regressions for session 30's differential run against PyTorch 2.13 (OpInfo cases, and the
random optimizer programs of tests/differential/programs_optim.py): each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, dtypes, shapes or the exception raised (class and message)."""

import warnings

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(f):
    """(dtype name, shape, values) of ``f()``'s tensor, or (class, message) it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's uint8-index deprecation
        err = _raised(f)
        if err:
            return err[0], err[1].replace("torch", "ember")
        r = f()
    return str(r.dtype).split(".")[-1], tuple(r.shape), _np(r).tolist()


def _setitem(x, index, value):
    x[index] = value
    return x


# ---- a number written under one uint8 mask is torch's masked_fill, which refuses it

_U8_INDEXES = {
    "mask": lambda L: L.tensor([[1, 1, 0], [0, 1, 1]], dtype=L.uint8),
    "row mask": lambda L: L.tensor([1, 0], dtype=L.uint8),
    "slice then mask": lambda L: (slice(None), L.tensor([1, 1, 0], dtype=L.uint8)),
    "int then mask": lambda L: (0, L.tensor([1, 1, 0], dtype=L.uint8)),
    "None then mask": lambda L: (None, L.tensor([1, 0], dtype=L.uint8)),
    "list of a mask": lambda L: [L.tensor([1, 0], dtype=L.uint8)],
    "two masks": lambda L: (L.tensor([1, 0], dtype=L.uint8), L.tensor([1, 1, 0], dtype=L.uint8)),
    "0-dim uint8": lambda L: L.tensor(1, dtype=L.uint8),
    "0-dim uint8 zero": lambda L: L.tensor(0, dtype=L.uint8),
}


@pytest.mark.parametrize("value", [1.0, 3, -1])
@pytest.mark.parametrize("index", sorted(_U8_INDEXES))
def test_setitem_number_under_a_uint8_mask(index, value):
    E, T = _both()

    def run(L):
        x = L.tensor([[6.0, 1, 7], [5, 7, 0]])
        return _setitem(x, _U8_INDEXES[index](L), value)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- numbers written by __setitem__: int64 range, then the dtype's range (NOTE [ Numbers
# written by __setitem__ ])

_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
           "float32", "float64", "complex64", "complex128"]
_VALUES = [300, -1, -256, 2 ** 31, 2 ** 63 - 1, -2 ** 63 - 1, 2 ** 63, 2.5, -1.0, 1e6, 1e39,
           float("inf"), 1j, -1 + 0j, 1e39 + 0j, True]
_INDEXES = {
    "int": lambda L: 0,
    "bool mask": lambda L: L.tensor([True, False, True]),
    "index tensor": lambda L: L.tensor([0, 2]),
    "False": lambda L: False,
}


@pytest.mark.parametrize("index", sorted(_INDEXES))
@pytest.mark.parametrize("value", _VALUES, ids=repr)
@pytest.mark.parametrize("dtype", _DTYPES)
def test_setitem_number_conversion(dtype, value, index):
    E, T = _both()

    def run(L):
        x = L.zeros(3, dtype=getattr(L, dtype))
        return _setitem(x, _INDEXES[index](L), value)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


def test_setitem_negative_int_wraps_into_uint8_under_a_bool_mask():
    E, T = _both()

    def run(L):
        x = L.tensor([[6, 1, 7], [5, 7, 0]], dtype=L.uint8)
        return _setitem(x, L.tensor([True, False]), -1)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))
    assert _outcome(lambda: run(E))[2][0] == [255, 255, 255]


def test_setitem_number_with_autograd_checks_the_conversion():
    E, T = _both()

    def run(L):
        x = L.zeros(3, dtype=L.float32, requires_grad=True).clone()
        return _setitem(x, 0, 1e39)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


# ---- masked_fill / masked_scatter / masked_select name a non-bool mask in torch's words

@pytest.mark.parametrize("op", ["masked_fill", "masked_fill_", "masked_scatter",
                                "masked_scatter_", "masked_select"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64", "float16",
                                   "bfloat16", "float32", "float64", "complex64"])
def test_masked_ops_refuse_a_non_bool_mask_in_torchs_words(op, dtype):
    E, T = _both()

    def run(L):
        x, m = L.zeros(2), L.tensor([1, 0]).to(getattr(L, dtype))
        if op.startswith("masked_fill"):
            return getattr(x, op)(m, 1.0)
        if op.startswith("masked_scatter"):
            return getattr(x, op)(m, L.ones(2))
        return x.masked_select(m)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


def test_outcome_helper_tells_values_apart():
    # the helper these tests lean on must see a different value
    E, _ = _both()
    assert _outcome(lambda: E.tensor([1.0])) != _outcome(lambda: E.tensor([2.0]))
    assert np.isfinite(_outcome(lambda: E.tensor([1.0]))[2][0])


# ---- optimizers (tests/differential/programs_optim.py)

_LOSS = """
def loss_of(ps, step):
    L = 0
    for i, p in enumerate(ps):
        w = T.cos(T.arange(p.numel(), dtype=p.dtype) * 0.91 + step + i).reshape(p.shape)
        L = L + ((p - w) ** 2 * (1 + 0.5 * w)).sum() + (p * w).sum() * 0.1
    return L
ps = [T.nn.Parameter(T.sin(T.arange(6, dtype=T.float64) * 0.37).reshape(2, 3)),
      T.nn.Parameter(T.sin(T.arange(4, dtype=T.float64) * 0.37 + 1))]
"""


def _program(source, L):
    env = {"T": L}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(_LOSS + source, env)
    return env["out"]


def _lbfgs_source(extra):
    return f"""
opt = T.optim.LBFGS(ps, lr=0.5, {extra})
for step in range(2):
    def closure():
        opt.zero_grad()
        L = loss_of(ps, step)
        L.backward()
        return L
    opt.step(closure)
st = opt.state[ps[0]]
out = st
"""


def test_lbfgs_keeps_its_curvature_scalars_as_tensors():
    E, T = _both()
    src = _lbfgs_source("max_iter=3, history_size=2")
    e, t = _program(src, E), _program(src, T)
    for key in ("H_diag", "ro", "al"):
        ev, tv = e[key], t[key]
        if key == "H_diag":
            ev, tv = [ev], [tv]
        assert [type(v).__name__ for v in ev] == [type(v).__name__ for v in tv], key
        for a, b in zip(ev, tv):
            if b is not None:
                np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(_np(e["d"]), _np(t["d"]), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("max_eval", [1, 2, 3, 4])
def test_lbfgs_line_search_spends_only_what_is_left_of_max_eval(max_eval):
    E, T = _both()
    src = _lbfgs_source(f"max_iter=5, max_eval={max_eval}, line_search_fn='strong_wolfe'") \
        + "out = (st['func_evals'], st['n_iter'], [p.detach() for p in ps])\n"
    e, t = _program(src, E), _program(src, T)
    assert e[:2] == t[:2]
    for a, b in zip(e[2], t[2]):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10, atol=1e-12)


def test_asgd_resumed_in_float64_rounds_eta_and_mu_through_the_default_dtype():
    E, T = _both()
    src = """
opt = T.optim.ASGD(ps, lr=0.01, alpha=0.5, t0=0.0, weight_decay=0.1)
for step in range(3):
    opt.zero_grad()
    loss_of(ps, step).backward()
    opt.step()
opt2 = T.optim.ASGD(ps, lr=0.01, alpha=0.5, t0=0.0, weight_decay=0.1)
opt2.load_state_dict(opt.state_dict())
for step in range(3, 6):
    opt2.zero_grad()
    loss_of(ps, step).backward()
    opt2.step()
st = opt2.state[ps[0]]
out = [st['mu'], st['eta'], st['ax'], ps[0].detach()]
"""
    for a, b in zip(_program(src, E), _program(src, T)):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_array_equal(_np(a), _np(b))


@pytest.mark.parametrize("base_lr", ["1e-3", "[1e-3]"])
def test_cyclic_lr_fills_a_tensor_lr_in_place(base_lr):
    E, T = _both()
    src = f"""
lr = T.tensor(0.05, dtype=T.float64)
opt = T.optim.Adam(ps, lr=lr)
sched = T.optim.lr_scheduler.CyclicLR(opt, base_lr={base_lr}, max_lr=0.1, step_size_up=2,
                                      cycle_momentum=False)
lrs = []
for step in range(4):
    opt.zero_grad()
    loss_of(ps, step).backward()
    opt.step()
    sched.step()
    lrs.append(sched.get_last_lr()[0])
out = (opt.param_groups[0]['lr'] is lr, [type(v).__name__ for v in lrs],
       [float(v) for v in lrs], type(opt.param_groups[0]['initial_lr']).__name__)
"""
    assert _program(src, E) == _program(src, T)


# ---- cholesky_inverse stops at the first exactly zero diagonal element, NaN before it or not

_NAN, _INF = float("nan"), float("inf")


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("factor", [
    [[_NAN, 0, 0], [0.5, 0.0, 0], [1, 2, 3]],
    [[_NAN, -_INF, 0.0], [0.19, 0.0, _NAN], [1.8e308, -0.21, 1.8e308]],
    [[1.0, 0, 0], [0.5, _NAN, 0], [1, 2, 0.0]],
    [[_INF, 0], [1, -0.0]],
])
def test_cholesky_inverse_refuses_a_zero_diagonal_after_a_nan(factor, upper):
    E, T = _both()

    def run(L):
        return L.cholesky_inverse(L.tensor(factor, dtype=L.float64), upper=upper)

    e, t = _outcome(lambda: run(E)), _outcome(lambda: run(T))
    assert e[1] == t[1]  # the message; the class is LinAlgError in both (torch's a subclass)


# ---- kernels built on NumPy's Python-level routines raise no floating-point warnings
# (NOTE [ Floating-point warnings ] in ember/__init__.py; torch computes silently)

_BIG = [1e308, _INF, -_INF, _NAN, 0.0, -1e308]


def _big(E):
    return E.tensor(_BIG, dtype=E.float64)


_QUIET_CALLS = {
    "cross": lambda E: E.cross(E.stack([_big(E)] * 3)[:, :3].T.contiguous(),
                               E.stack([_big(E)] * 3)[:, 3:].T.contiguous(), dim=1),
    "linalg.cross": lambda E: E.linalg.cross(_big(E)[:3].reshape(1, 3),
                                             _big(E)[3:].reshape(1, 3).flip(1)),
    "det": lambda E: E.linalg.det(_big(E)[:4].reshape(2, 2)),
    "slogdet": lambda E: E.linalg.slogdet(E.tensor([[_INF, 1.0], [1.0, _INF]])),
    "fft": lambda E: E.fft.fft(E.tensor([1e308, 1e308, 1e308, 1.0], dtype=E.float64)),
    "rfft": lambda E: E.fft.rfft(E.tensor([1e308, 1e308, 1e308, 1.0], dtype=E.float64)),
    "irfft": lambda E: E.fft.irfft(E.tensor([1e308, 1e308, 1e308], dtype=E.complex128)),
    "sinc": lambda E: E.sinc(_big(E)),
    "tensordot": lambda E: E.tensordot(_big(E), _big(E), 1),
    "matrix_exp": lambda E: E.linalg.matrix_exp(E.tensor([[800.0, 0.0], [0.0, 1.0]],
                                                         dtype=E.float64)),
    "vander": lambda E: E.linalg.vander(E.tensor([1e200, 2.0], dtype=E.float64), N=4),
    "cumsum": lambda E: E.cumsum(E.tensor([1e308, 1e308, -_INF], dtype=E.float64), 0),
    "cumulative_trapezoid": lambda E: E.cumulative_trapezoid(
        E.tensor([1e308, 1e308, -_INF], dtype=E.float64)),
}


@pytest.mark.parametrize("op", sorted(_QUIET_CALLS))
def test_kernel_over_numpy_routines_raises_no_floating_point_warning(op):
    E, _ = _both()
    with warnings.catch_warnings(record=True) as seen:
        # after ember's own filter, so that it still applies, as in a user's program
        warnings.filterwarnings("always", category=RuntimeWarning, append=True)
        _QUIET_CALLS[op](E)
    assert [str(w.message) for w in seen if issubclass(w.category, RuntimeWarning)] == []


# ---- an in-place op or out= checks the cast of the result dtype before it looks for a kernel

# (not atan2 and the like: an integer input with a float64 out= computes in float32 in
# torch, a value difference outside this test)
_CAST_OPS = ["bitwise_and", "bitwise_xor", "copysign", "xlogy", "nextafter", "fmod", "gcd",
             "bitwise_left_shift", "heaviside", "maximum"]
_CAST_DTYPES = ["bool", "uint8", "int32", "float16", "float64", "complex64"]


@pytest.mark.parametrize("form", ["inplace", "out"])
@pytest.mark.parametrize("other", _CAST_DTYPES)
@pytest.mark.parametrize("self_dtype", _CAST_DTYPES)
@pytest.mark.parametrize("op", _CAST_OPS)
def test_inplace_and_out_check_the_cast_before_the_kernel(op, self_dtype, other, form):
    E, T = _both()

    def run(L):
        x, y = L.ones(2, dtype=getattr(L, self_dtype)), L.ones(2, dtype=getattr(L, other))
        if form == "inplace":
            return getattr(x, op + "_")(y)
        return getattr(L, op)(y, y, out=x)

    assert _outcome(lambda: run(E)) == _outcome(lambda: run(T))


@pytest.mark.parametrize("op", ["atan2_", "nextafter_", "hypot_", "heaviside_", "igamma_"])
def test_inplace_method_counts_argument_positions_after_self(op):
    E, T = _both()
    assert _outcome(lambda: getattr(E.ones(2), op)(1.0)) == \
        _outcome(lambda: getattr(T.ones(2), op)(1.0))


def test_half_group_norm_statistics_in_float32():
    # a float16 group whose variance passes float16's range: torch's kernel works in float32
    # and rounds mean and rstd once (rstd 3.05e-05, not 0 from an infinite variance)
    import ember

    torch = pytest.importorskip("torch")
    x = [[[65504.0, -65504.0, 1.0, 2.0], [3.0, 4.0, 5.0, 6.0]]]
    got = ember.native_group_norm(ember.tensor(x, dtype=ember.float16), None, None, 1, 2, 4,
                                  1, 1e-5)
    want = torch.native_group_norm(torch.tensor(x, dtype=torch.float16), None, None, 1, 2, 4,
                                   1, 1e-5)
    for a, e in zip(got, want):
        assert a.dtype == ember.float16
        np.testing.assert_array_equal(a.float().numpy(), e.float().numpy())
    assert float(got[2]) > 0

"""Session 29's fast paths against their plain forms (issue 22).

- GELU's and SiLU's compiled kernels call the cheaper exp variants (``_expf_shifted`` for
  GELU's ``exp(-x**2/2)``, ``_expf_quiet`` for SiLU's): the same bits as the same loops with
  the general ``_expf``, over every 61st float32 bit pattern and the special values; and
  the ops against PyTorch on the layouts and dtypes that take other paths.
- ``autograd.grad`` and ``backward(inputs=...)`` restrict the graph from recorded parents
  (NOTE [ Nodes on a path to the inputs ] in ember/autograd/_engine.py): the gradients and
  the nodes that run are PyTorch's on graphs with shared nodes, several roots, inputs in
  the middle of the graph and inputs the outputs do not reach.
"""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


# ------------------------------------------------------------------------------------------------
# GELU and SiLU kernels


def _sweep():
    """Every 61st float32 bit pattern (both signs, denormals, inf and NaN among them) and the
    values at the ends of the exp's clamps."""
    x = np.arange(0, 1 << 32, 61, dtype=np.uint64).astype(np.uint32).view(np.float32)
    ends = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 13.2, -13.2, -13.3, 88.7,
            -88.7, 89.0, -89.0, 104.0, -104.0, -1e30, 1e30]
    return np.concatenate([x, np.array(ends, np.float32)])


@pytest.fixture(scope="module")
def references():
    """The GELU and SiLU loops as they were, each calling the general ``_expf``."""
    pytest.importorskip("numba")
    return _references()


def _references():
    from numba import njit

    from ember._kernels import _numba as k

    @njit(fastmath=k._FM, error_model="numpy", inline="always")
    def phi_and_gauss(xs):
        t = k._ONE / (abs(xs) * k._PHI_P + k._ONE)
        q = k._R0 * t
        q = (q + k._R1) * t
        q = (q + k._R2) * t
        q = (q + k._R3) * t
        q = (q + k._R4) * t
        q = (q + k._R5) * t
        q = (q + k._R6) * t
        q = (q + k._R7) * t
        q = (q + k._R8) * t
        e = k._expf(xs * xs * k._MINUS_HALF)
        q = q * e
        pos = k._ONE if xs > k._ZERO else k._ZERO
        return abs(pos - q), e

    @njit(fastmath=k._FM, error_model="numpy")
    def gelu(x, out):
        for j in range(x.size):
            out[j] = x[j] * phi_and_gauss(x[j])[0]

    @njit(fastmath=k._FM, error_model="numpy")
    def gelu_backward(g, x, out):
        for j in range(x.size):
            xs = x[j]
            d, e = phi_and_gauss(xs)
            out[j] = g[j] * (d + e * xs * k._INV_SQRT_2PI)

    @njit(fastmath=k._FM, error_model="numpy")
    def silu(x, out):
        for j in range(x.size):
            out[j] = x[j] / (k._ONE + k._expf(-x[j]))

    @njit(fastmath=k._FM, error_model="numpy")
    def silu_backward(g, x, out):
        for j in range(x.size):
            xs = x[j]
            s = k._ONE / (k._ONE + k._expf(-xs))
            out[j] = g[j] * (s * (k._ONE + xs * (k._ONE - s)))

    return {"gelu_out_into": gelu, "gelu_backward_into": gelu_backward,
            "silu_into": silu, "silu_backward_into": silu_backward}


def _same(got, want):
    """The same bits, any NaN standing for any NaN (the NaN blend the kernels skip chose
    among NaNs only)."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("name", ["gelu_out_into", "silu_into"])
def test_forward_kernel_same_bits_as_with_the_general_exp(numba_backend, references, name):
    x = _sweep()
    got, want = np.empty_like(x), np.empty_like(x)
    getattr(numba_backend, name)(x, got)
    references[name](x, want)
    _same(got, want)


@pytest.mark.parametrize("name", ["gelu_backward_into", "silu_backward_into"])
def test_backward_kernel_same_bits_as_with_the_general_exp(numba_backend, references, name):
    x = _sweep()
    g = np.random.default_rng(0).standard_normal(x.size).astype(np.float32)
    got, want = np.empty_like(x), np.empty_like(x)
    getattr(numba_backend, name)(g, x, got)
    references[name](g, x, want)
    _same(got, want)


def _layouts():
    rng = np.random.default_rng(3)
    base = (rng.standard_normal((6, 9)) * 4).astype(np.float32)
    return {
        "contiguous": lambda fw: fw.from_numpy(base.copy()),
        "transposed": lambda fw: fw.from_numpy(base.copy()).t(),
        "strided": lambda fw: fw.from_numpy(base.copy())[:, ::2],
        "float64": lambda fw: fw.from_numpy(base.astype(np.float64)),
        "bfloat16": lambda fw: fw.from_numpy(base.copy()).to(fw.bfloat16),
        "empty": lambda fw: fw.from_numpy(base[:0].copy()),
    }


@pytest.mark.parametrize("layout", list(_layouts()))
@pytest.mark.parametrize("op", ["gelu", "silu"])
def test_activation_values_and_gradients_match_torch(op, layout):
    make = _layouts()[layout]
    results = []
    for fw in (ember, torch):
        x = make(fw).detach().requires_grad_(True)
        y = getattr(fw.nn.functional, op)(x)
        cot = fw.from_numpy(np.linspace(-2, 2, y.numel(), dtype=np.float32)
                            .reshape(tuple(y.shape))).to(y.dtype)
        y.backward(cot)
        results.append([y.detach().float().numpy(), x.grad.float().numpy()])
    tol = dict(rtol=2e-2, atol=2e-2) if layout == "bfloat16" else dict(rtol=1e-5, atol=1e-6)
    for got, want in zip(*results):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, **tol)


# ------------------------------------------------------------------------------------------------
# grad and backward(inputs=) over the nodes on a path to the inputs


def _graph(fw):
    """Leaves a, b, c, d (d unused); an intermediate h shared by two branches; two roots."""
    rng = np.random.default_rng(1)
    a, b, c, d = (fw.from_numpy(rng.standard_normal(4)).requires_grad_(True)
                  for _ in range(4))
    h = a * b + a
    u = (h * c).tanh()
    v = (h.exp() * b).sum() + (u * u).sum()
    w = (u * 3).sum()
    return (a, b, c, d), h, u, v, w


def _numpy(ts):
    return [None if t is None else t.detach().numpy() for t in ts]


@pytest.mark.parametrize("case", ["leaves", "intermediate", "mixed", "two_roots", "unused",
                                  "repeated", "create_graph"])
def test_grad_restricted_graph_matches_torch(case):
    results = []
    for fw in (ember, torch):
        (a, b, c, d), h, u, v, w = _graph(fw)
        if case == "leaves":
            r = fw.autograd.grad(v, (a, c))
        elif case == "intermediate":
            r = fw.autograd.grad(v, (h, u))
        elif case == "mixed":
            r = fw.autograd.grad(v, (u, a, b))
        elif case == "two_roots":
            r = fw.autograd.grad((v, w), (b, h))
        elif case == "unused":
            r = fw.autograd.grad(v, (a, d), allow_unused=True)
        elif case == "repeated":
            r = fw.autograd.grad(v, (a, a, h))
        else:
            (ga,) = fw.autograd.grad(v, a, create_graph=True)
            r = fw.autograd.grad(ga.sum(), (b, c))
        results.append(_numpy(r))
    for got, want in zip(*results):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("which", ["leaf", "intermediate", "both"])
def test_backward_inputs_accumulates_only_the_inputs_as_torch(which):
    results = []
    for fw in (ember, torch):
        (a, b, c, d), h, u, v, w = _graph(fw)
        h.retain_grad()
        inputs = {"leaf": [b], "intermediate": [h], "both": [h, c]}[which]
        v.backward(inputs=inputs)
        results.append(_numpy([a.grad, b.grad, c.grad, d.grad, h.grad]))
    for got, want in zip(*results):
        if want is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_grad_runs_only_nodes_that_reach_an_input():
    # a hook on a branch that does not lead to the input must not fire, as in torch
    fired = []
    for fw in (ember, torch):
        x = fw.ones(3, requires_grad=True)
        y = fw.ones(3, requires_grad=True)
        side = (y * 2).sum()
        side.grad_fn.register_hook(lambda *_: fired.append(fw.__name__))
        (g,) = fw.autograd.grad((x * 3).sum() + side, x)
        np.testing.assert_array_equal(g.numpy(), [3.0, 3.0, 3.0])
    assert fired == []


# ------------------------------------------------------------------------------------------------
# integer and bool zero-dim operands beside float tensors (NOTE [ Integer zero-dim operands ]
# in ember/_ops/_elementwise.py)


_ZERO_DIMS = [0, 2, -3, 255, 16777217, 2**40 + 1, -(2**53 + 1), True, False]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("first", [False, True])
def test_integer_zero_dim_operand_same_bits_as_general_path_and_torch(dtype, op, first):
    from ember._ops import _elementwise, arithmetic

    kernel_op = getattr(arithmetic, f"{op}_op")
    x = (np.random.default_rng(0).standard_normal(9) * 1e3).astype(dtype)
    for v in _ZERO_DIMS:
        zdt = np.bool_ if isinstance(v, bool) else np.uint8 if v == 255 else np.int64
        results = []
        for run in ("direct", "general", "torch"):
            fw = torch if run == "torch" else ember
            a, z = fw.from_numpy(x.copy()), fw.from_numpy(np.asarray(v, zdt))
            args = (z, a) if first else (a, z)
            try:
                if run == "direct":
                    r = _elementwise._with_zero_dim(kernel_op, *args, args[0]._data,
                                                    args[1]._data)
                    assert r is not None
                elif run == "general":
                    r = _elementwise.elementwise(kernel_op, args)
                else:
                    r = getattr(torch, op)(*args)
                results.append(r.numpy())
            except RuntimeError as e:  # sub of a bool: the same refusal everywhere
                results.append(str(e))
        direct, general, want = results
        if isinstance(want, str):
            assert direct == general == want
            continue
        assert direct.dtype == want.dtype == general.dtype
        np.testing.assert_array_equal(direct, general)
        np.testing.assert_array_equal(direct, want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_number_operand_gradients_match_torch(dtype):
    results = []
    for fw in (torch, ember):
        x = fw.from_numpy(np.linspace(-3, 3, 12, dtype=np.float32)).to(
            getattr(fw, dtype)).requires_grad_(True)
        y = ((x * 3) / 2 + 5 - 1 + x[::2].repeat(2) * fw.tensor(4)).sum()
        (g,) = fw.autograd.grad(y, x)
        results.append((y.detach().float().numpy(), g.float().numpy()))
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)

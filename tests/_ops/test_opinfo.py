"""Generic tests driven by the OpInfo table (ember/testing/opinfos/*.py), on the CPU; the same
table runs on the other devices in tests/device/test_ops_device.py."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember
from ember.utils._pytree import tree_map_only
from ember._core import dtype as _dt
from ember.testing import assert_close
from ember.testing._opinfo import load_op_db
from tests.conftest import HAS_TORCH

op_db = load_op_db()
ids = [info.id for info in op_db]


def _torch():
    import torch

    return torch


def _rng(info, dtype):
    return np.random.default_rng(zlib.crc32(f"{info.id}/{dtype.name}".encode()))


def _samples(info, dtype):
    return list(info.sample_inputs(dtype, _rng(info, dtype)))


def _map(x, f):
    """``x`` with ``f`` applied to each tensor inside it (lists, tuples, dicts)."""
    return tree_map_only(ember.Tensor, f, x)


def _np(t):
    a = t.detach().numpy().copy()
    return a.astype(np.float32) if a.dtype == _dt.bfloat16.np else a


def _torch_value(x):
    import torch

    if isinstance(x, ember.Tensor):
        a = x.detach().numpy()
        if a.dtype == _dt.bfloat16.np:
            return torch.from_numpy(a.astype(np.float32)).to(torch.bfloat16)
        return torch.from_numpy(a.copy())
    if isinstance(x, _dt.dtype):
        return getattr(torch, x.name)
    if isinstance(x, list):
        return [_torch_value(y) for y in x]
    if isinstance(x, tuple):
        return tuple(_torch_value(y) for y in x)
    if isinstance(x, dict):
        return {k: _torch_value(v) for k, v in x.items()}
    return x


def _call(fn, s, **extra):
    return fn(s.input, *s.args, **s.kwargs, **extra)


def _results(r):
    """Flatten a result into a list of tensors / values for comparison."""
    if isinstance(r, (tuple, list)):
        out = []
        for x in r:
            out.extend(_results(x))
        return out
    return [r]


def _close(a, b, info, ctx, check_dtype=True, exact=False):
    ra, rb = _results(a), _results(b)
    assert len(ra) == len(rb), f"{ctx}: {len(ra)} results vs {len(rb)}"
    for x, y in zip(ra, rb):
        if exact:
            assert_close(x, y, rtol=0, atol=0, check_dtype=check_dtype, msg=ctx)
        elif isinstance(x, ember.Tensor) or hasattr(y, "shape"):
            assert_close(x, y, rtol=info.rtol, atol=info.atol, check_dtype=check_dtype,
                         msg=ctx)
        else:
            assert x == y or (x != x and y != y), f"{ctx}: {x!r} != {y!r}"


def _skip(info, test):
    if test in info.skips:
        pytest.skip(info.skips[test])


@pytest.mark.parametrize("info", op_db, ids=ids)
def test_reference(info):
    """Values agree with the NumPy reference for every supported dtype."""
    _skip(info, "reference")
    if info.ref is None or info.nondeterministic:
        pytest.skip("no NumPy reference")
    for dtype in info.dtypes:
        for s in _samples(info, dtype):
            ctx = f"{info.id} {dtype} {s}"
            got = _call(info.get_op(), s)
            np_args = _map(s.all_args(), _np)
            np_kwargs = _map(s.kwargs, _np)
            want = info.ref(*np_args, **np_kwargs)
            for x, y in zip(_results(got), _results(want)):
                if isinstance(x, ember.Tensor):
                    y = np.asarray(y)
                    assert tuple(x.shape) == y.shape, f"{ctx}: shape {tuple(x.shape)} vs {y.shape}"
                    assert_close(x, y.astype(_np(x).dtype) if y.dtype != object else y,
                                 rtol=info.rtol, atol=info.atol, check_dtype=False, msg=ctx)
                else:
                    assert np.allclose(x, y, equal_nan=True), f"{ctx}: {x} vs {y}"


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("info", op_db, ids=ids)
def test_torch_conformance(info):
    """Values and result dtypes agree with real PyTorch on the same samples."""
    _skip(info, "torch")
    import torch  # noqa: F401

    top = info.get_torch_op(_torch())
    if top is None:
        pytest.skip("no torch counterpart")
    compared = 0
    for dtype in info.dtypes:
        for s in _samples(info, dtype):
            ctx = f"{info.id} {dtype} {s}"
            try:
                want = top(*_torch_value(s.all_args()), **_torch_value(s.kwargs))
            except Exception:  # torch does not support this sample: not a conformance point
                continue
            got = _call(info.get_op(), s)
            if info.nondeterministic:
                for x, y in zip(_results(got), _results(want)):
                    if isinstance(x, ember.Tensor):
                        assert tuple(x.shape) == tuple(y.shape), ctx
                        assert x.dtype.name == str(y.dtype).replace("torch.", ""), ctx
                continue
            _close(got, want, info, ctx)
            compared += 1
    assert compared or info.nondeterministic, "no sample could be compared with torch"


@pytest.mark.parametrize("info", op_db, ids=ids)
def test_noncontiguous(info):
    """Non-contiguous inputs give the same values as contiguous ones."""
    _skip(info, "noncontiguous")
    if info.nondeterministic:
        pytest.skip("random op")
    dtype = info.dtypes[-1] if _dt.float32 not in info.dtypes else _dt.float32
    for s in _samples(info, dtype):

        def nc(t):
            if t.dim() == 0 or t.numel() <= 1:  # one element is always contiguous
                return t
            a = t.numpy()
            wide = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), dtype=a.dtype)
            wide[..., ::2] = a
            v = ember.from_numpy(wide[..., ::2])
            assert not v.is_contiguous()
            return v

        args = _map(s.all_args(), nc)
        kwargs = _map(s.kwargs, nc)
        got = info.get_op()(*args, **kwargs)
        want = _call(info.get_op(), s)
        _close(got, want, info, f"{info.id} {dtype} {s}", exact=True)


@pytest.mark.parametrize("info", op_db, ids=ids)
def test_variants(info):
    """Function, method, in-place and out= forms agree."""
    _skip(info, "variants")
    meth = info.get_method() if info.method else None
    inplace = info.get_inplace() if info.inplace else None
    if info.method:
        assert meth is not None, f"Tensor.{info.name} is missing"
    if info.inplace:
        assert inplace is not None, f"Tensor.{info.name}_ is missing"
    # random ops draw the same numbers in every form when each form starts from one seed
    seeded = info.nondeterministic
    with ember.random.fork_rng(enabled=seeded):

        def call(fn, input, s, **extra):
            if seeded:
                ember.manual_seed(0)
            return fn(input, *s.args, **s.kwargs, **extra)

        for dtype in info.dtypes:
            for s in _samples(info, dtype):
                ctx = f"{info.id} {dtype} {s}"
                want = call(info.get_op(), s.input, s)
                if meth is not None:
                    _close(call(meth, s.input, s), want, info, ctx + " (method)")
                # an in-place form keeps self's dtype and shape, except that an in-place view
                # op (t_, squeeze_) gives self the view's shape
                if inplace is not None and isinstance(want, ember.Tensor) and \
                        want.dtype == s.input.dtype and \
                        (want.shape == s.input.shape or info.is_view):
                    target = s.input.clone()
                    r = call(inplace, target, s)
                    assert r is target, f"{ctx}: in-place form must return self"
                    _close(target, want, info, ctx + " (in-place)")
                results = _results(want)
                if info.supports_out and all(isinstance(x, ember.Tensor) for x in results):
                    outs = [ember.empty(0, dtype=x.dtype) for x in results]
                    out = outs[0] if isinstance(want, ember.Tensor) else tuple(outs)
                    try:
                        r = call(info.get_op(), s.input, s, out=out)
                    except TypeError:
                        # some overloads have no out= (``prod(x)``, ``where(c, x, 2)``):
                        # fine where torch's own out= form refuses the same call
                        if not HAS_TORCH or not _torch_refuses_out(info, s, out):
                            raise
                        continue
                    rs = _results(r)
                    assert len(rs) == len(outs) and all(x is o for x, o in zip(rs, outs)), \
                        f"{ctx}: out= form must return out"
                    _close(tuple(outs), want, info, ctx + " (out=)")


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("info", [i for i in op_db if i.inplace and not i.nondeterministic],
                         ids=lambda i: i.id)
def test_inplace_matches_torch(info):
    """In-place forms follow PyTorch's rules on every sample torch's function accepts, those
    whose result would change self's dtype or shape included: the same values written into
    self, or the same exception type."""
    _skip(info, "torch")
    _skip(info, "inplace_torch")
    torch = _torch()
    top = info.get_torch_op(torch)
    torch_inplace = getattr(torch.Tensor, info.name.split(".")[-1] + "_")
    inplace = info.get_inplace()
    compared = 0
    for dtype in info.dtypes:
        for s in _samples(info, dtype):
            ctx = f"{info.id} {dtype} {s} (in-place)"
            args, kwargs = _torch_value(s.all_args()), _torch_value(s.kwargs)
            try:
                top(*args, **kwargs)
            except Exception:  # noqa: BLE001 -- a sample torch rejects is no conformance point
                continue
            target = s.input.clone()
            try:
                torch_inplace(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 -- ember must refuse it the same way
                with pytest.raises(type(e)):
                    inplace(target, *s.args, **s.kwargs)
                continue
            inplace(target, *s.args, **s.kwargs)
            _close(target, args[0], info, ctx)
            compared += 1
    assert compared, "no sample could be compared with torch"


def _torch_refuses_out(info, s, out):
    """Whether torch raises TypeError for sample ``s`` in its out= form."""
    top = info.get_torch_op(_torch())
    if top is None:
        return False
    try:
        top(*_torch_value(s.all_args()), **_torch_value(s.kwargs), out=_torch_value(out))
    except TypeError:
        return True
    except Exception:
        return False
    return False


@pytest.mark.parametrize("info", [i for i in op_db if i.is_view], ids=lambda i: i.id)
def test_view_shares_memory(info):
    """View ops return tensors that share the input's storage and version counter."""
    dtype = info.dtypes[0]
    for s in _samples(info, dtype):
        r = _call(info.get_op(), s)
        for x in _results(r):
            if x.numel():
                assert x.untyped_storage() == s.input.untyped_storage(), f"{info.id} {s}"
                before = x._version
                s.input.add_(0) if s.input.dtype != ember.bool else s.input.bitwise_or_(False)
                assert x._version == before + 1, f"{info.id}: views share the version counter"


@pytest.mark.parametrize("info", [i for i in op_db if i.error_inputs], ids=lambda i: i.id)
def test_error_inputs(info):
    """Bad input raises PyTorch's exception type (and matches torch where installed)."""
    for e in info.error_inputs(np.random.default_rng(0)):
        s = e.sample
        with pytest.raises(e.error_type, match=e.match or None):
            _call(info.get_op(), s)
        if HAS_TORCH and info.get_torch_op(_torch()) is not None:
            with pytest.raises(e.error_type):
                info.get_torch_op(_torch())(*_torch_value(s.all_args()),
                                             **_torch_value(s.kwargs))


def _gradcheck_available():
    return hasattr(ember.autograd, "gradcheck")


@pytest.mark.skipif(not _gradcheck_available(), reason="autograd.gradcheck is not available")
@pytest.mark.parametrize("info", [i for i in op_db if i.differentiable], ids=lambda i: i.id)
def test_gradients(info):
    """gradcheck and gradgradcheck pass in float64 (and complex128 where supported)."""
    _skip(info, "gradients")
    from ember.autograd import gradcheck, gradgradcheck

    checked = 0
    for dtype in (d for d in info.grad_dtypes if d in info.dtypes):
        for s in _samples(info, dtype):
            tensors = [x for x in _results(list(s.all_args()) + list(s.kwargs.values()))
                       if isinstance(x, ember.Tensor) and x.dtype == dtype and x.numel()]
            if not tensors:
                continue
            for t in tensors:
                t.requires_grad_(True)
            args, kwargs = s.all_args(), s.kwargs

            def fn(*ts):
                it = iter(ts)
                sub = lambda x: next(it) if any(x is t for t in tensors) else x  # noqa: E731
                a = _map(args, sub)
                k = _map(kwargs, sub)
                return info.get_op()(*a, **k)

            assert gradcheck(fn, tuple(tensors), eps=1e-6, atol=1e-5, rtol=1e-3), s
            if "gradgrad" not in info.skips:
                assert gradgradcheck(fn, tuple(tensors), eps=1e-6, atol=1e-5, rtol=1e-3), s
            checked += 1
    if not checked:
        pytest.skip("no differentiable sample")


def _grads(results, cots, inputs, grad, wrap):
    """Backpropagate ``cots`` from the results that require grad; all None where none does."""
    total = None
    for r, c in zip(results, cots):
        if c is not None and getattr(r, "requires_grad", False):
            term = r * wrap(c)
            # a real scalar; complex results enter through their real part
            term = (term.real if term.is_complex() else term).sum()
            total = term if total is None else total + term
    if total is None:
        return [None] * len(inputs)
    return grad(total, inputs, allow_unused=True)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("info", [i for i in op_db if not i.nondeterministic],
                         ids=lambda i: i.id)
def test_gradients_match_torch(info):
    """Backpropagating the same cotangent gives PyTorch's gradients (float64 samples).

    Every entry takes part, ``differentiable`` or not: an op ember leaves without a
    derivative must be one whose gradient PyTorch gives as None or zeros.
    """
    _skip(info, "torch")
    _skip(info, "torch_gradients")
    top = info.get_torch_op(_torch())
    if top is None or _dt.float64 not in info.dtypes:
        pytest.skip("no torch counterpart or no float64 support")
    import torch

    compared = 0
    for s in _samples(info, _dt.float64):
        leaves = [x for x in _results(list(s.all_args()) + list(s.kwargs.values()))
                  if isinstance(x, ember.Tensor) and x.dtype == _dt.float64 and x.numel()]
        if not leaves:
            continue
        e_args = _map(s.all_args(), lambda t: t.detach().clone().requires_grad_(
            any(t is l for l in leaves)))
        e_kwargs = _map(s.kwargs, lambda t: t.detach().clone().requires_grad_(
            any(t is l for l in leaves)))
        t_args = _map(e_args, lambda t: _torch_value(t).requires_grad_(t.requires_grad)
                      if t.requires_grad else _torch_value(t))
        t_kwargs = _map(e_kwargs, lambda t: _torch_value(t).requires_grad_(t.requires_grad)
                        if t.requires_grad else _torch_value(t))
        try:
            t_out = top(*t_args, **t_kwargs)
        except Exception:  # noqa: BLE001 -- a sample torch rejects is no conformance point
            continue
        e_out = info.get_op()(*e_args, **e_kwargs)
        e_res, t_res = _results(e_out), _results(t_out)
        assert len(e_res) == len(t_res), f"{info.id} {s}: {len(e_res)} results vs {len(t_res)}"
        # one cotangent per result position that either side differentiates
        rng = np.random.default_rng(0)
        cots = [rng.standard_normal(tuple(t.shape))
                if getattr(e, "requires_grad", False) or getattr(t, "requires_grad", False)
                else None for e, t in zip(e_res, t_res)]
        if all(c is None for c in cots):
            continue
        e_in = [x for x in _results(list(e_args) + list(e_kwargs.values()))
                if isinstance(x, ember.Tensor) and x.requires_grad]
        t_in = [x for x in _results(list(t_args) + list(t_kwargs.values()))
                if hasattr(x, "requires_grad") and x.requires_grad]
        try:
            t_grads = _grads(t_res, cots, t_in, torch.autograd.grad, torch.from_numpy)
        except Exception:  # noqa: BLE001 -- torch cannot differentiate this sample
            continue
        e_grads = _grads(e_res, cots, e_in, ember.autograd.grad, ember.from_numpy)
        for i, (eg, tg) in enumerate(zip(e_grads, t_grads)):
            ctx = f"{info.id} {s}: input {i}"
            if tg is not None and tg._is_zerotensor():
                tg = torch.zeros(tg.shape, dtype=tg.dtype)
            # None stands for zeros on either side, and for nothing else
            if eg is None:
                assert tg is None or not tg.abs().sum().item(), \
                    f"{ctx}: ember gives no gradient where torch's is nonzero"
                continue
            if tg is None:
                assert not eg.abs().sum().item(), \
                    f"{ctx}: ember gives a nonzero gradient where torch gives none"
                continue
            assert_close(eg, tg.resolve_conj(), rtol=1e-5, atol=1e-6, msg=ctx)
        compared += 1
    if not compared:
        pytest.skip("no sample torch could differentiate")

"""The OpInfo table on every device other than the CPU (the test device always, CUDA when
present): each sample is made on the CPU, copied to the device and run there; results must
stay on the device and agree with the CPU's, in every form (function, method, in-place,
out=), and gradients must too. The CPU itself is covered by tests/_ops/test_opinfo.py.

To keep CI time modest each entry runs at float32 (or its first dtype) and int64 where it
supports them (every dtype with EMBER_TEST_ALL_DTYPES=1), and gradients at float64. Known
failures are listed in ``XFAIL`` with their reason.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest

import ember
from ember.utils._pytree import tree_map_only
from ember._core import dtype as _dt
from ember.testing import assert_close, instantiate_device_type_tests
from ember.testing._device_type import _name_part, ops
from ember.testing._opinfo import load_op_db

op_db = load_op_db()


def _value_dtypes(info):
    """float32 (or the first dtype supported) and int64 where supported; every dtype with
    EMBER_TEST_ALL_DTYPES=1 in the environment (a longer run, for a GPU session)."""
    if os.environ.get("EMBER_TEST_ALL_DTYPES") == "1":
        return list(info.dtypes)
    first = [_dt.float32] if _dt.float32 in info.dtypes else list(info.dtypes[:1])
    return first + [d for d in (_dt.int64,) if d in info.dtypes and d not in first]


#: (op id, test, device type) -> why it fails there; ``test`` is "values" or "grad". Each
#: becomes xfail(strict=True) on its instantiated tests (all dtypes), so a fix shows up as
#: an unexpected pass and the entry must go.
XFAIL: dict = {}


def _mark_xfails(scope):
    for (op_id, test, device_type), reason in XFAIL.items():
        cls = scope.get("TestOpsOnDevice" + device_type.upper())
        prefix = f"test_{test}_{_name_part(op_id)}_{device_type}_"
        names = [n for n in dir(cls) if n.startswith(prefix)] if cls is not None else []
        for name in names:
            pytest.mark.xfail(strict=True, reason=reason)(getattr(cls, name))


def _rng(info, dtype):
    return np.random.default_rng(zlib.crc32(f"{info.id}/{dtype.name}".encode()))


def _map(x, f):
    """``x`` with ``f`` applied to each tensor inside it (lists, tuples, dicts)."""
    return tree_map_only(ember.Tensor, f, x)


def _flat(r):
    if isinstance(r, (tuple, list)):
        return [y for x in r for y in _flat(x)]
    return [r]


def _to(device):
    return lambda t: t.detach().to(device).requires_grad_(t.requires_grad)


def _check_on(results, device, ctx):
    for x in _flat(results):
        if isinstance(x, ember.Tensor):
            assert x.device.type == ember.device(device).type, \
                f"{ctx}: a result is on {x.device}, not on {device}"


def _same(got, want, info, ctx):
    """Device results ``got`` equal the CPU's ``want`` (copied back to the CPU)."""
    g, w = _flat(got), _flat(want)
    assert len(g) == len(w), f"{ctx}: {len(g)} results vs {len(w)}"
    for x, y in zip(g, w):
        if isinstance(y, ember.Tensor):
            assert isinstance(x, ember.Tensor), f"{ctx}: {type(x).__name__} for a Tensor"
            if info.nondeterministic:
                assert (x.shape, x.dtype) == (y.shape, y.dtype), ctx
                continue
            rtol, atol = info.device_tols.get(x.device.type, (info.rtol, info.atol))
            assert_close(x.cpu(), y, rtol=rtol, atol=atol, msg=ctx)
        elif not info.nondeterministic:
            assert x == y or (x != x and y != y), f"{ctx}: {x!r} != {y!r}"


class TestOpsOnDevice:
    """Every OpInfo entry on a device, compared with the CPU."""

    @ops(op_db, dtypes=_value_dtypes)
    def test_values(self, device, dtype, op):
        """Function, method, in-place and out= forms on the device give the CPU's values,
        on the device."""
        for s in op.sample_inputs(dtype, _rng(op, dtype)):
            ctx = f"{op.id} {dtype} {s} on {device}"
            args = _map(s.all_args(), _to(device))
            kwargs = _map(s.kwargs, _to(device))
            if not any(isinstance(x, ember.Tensor) for x in _flat(list(args)) +
                       _flat(list(kwargs.values()))):
                kwargs["device"] = device  # a factory: it is told where to build
            with ember.random.fork_rng(enabled=op.nondeterministic):
                ember.manual_seed(0)
                want = op.get_op()(*s.all_args(), **s.kwargs)
            got = op.get_op()(*args, **kwargs)
            _check_on(got, device, ctx)
            _same(got, want, op, ctx)
            if op.method and op.get_method() is not None:
                r = op.get_method()(*args, **kwargs)
                _check_on(r, device, ctx + " (method)")
                _same(r, want, op, ctx + " (method)")
            inplace = op.get_inplace() if op.inplace else None
            if inplace is not None and isinstance(want, ember.Tensor) and \
                    want.dtype == s.input.dtype and want.shape == s.input.shape:
                target = args[0].clone()
                inplace(target, *args[1:], **kwargs)
                _check_on(target, device, ctx + " (in-place)")
                _same(target, want, op, ctx + " (in-place)")
            results = _flat(want)
            if op.supports_out and all(isinstance(x, ember.Tensor) for x in results):
                outs = [ember.empty(0, dtype=x.dtype, device=device) for x in results]
                out = outs[0] if isinstance(want, ember.Tensor) else tuple(outs)
                try:
                    op.get_op()(*args, **kwargs, out=out)
                except TypeError:
                    # an overload without out= (torch's TypeError, as on the CPU)
                    host = [ember.empty(0, dtype=x.dtype) for x in results]
                    with pytest.raises(TypeError):
                        op.get_op()(*s.all_args(), **s.kwargs,
                                    out=host[0] if isinstance(want, ember.Tensor) else tuple(host))
                    continue
                _check_on(outs, device, ctx + " (out=)")
                _same(tuple(outs), want, op, ctx + " (out=)")

    @ops([i for i in op_db if i.differentiable and not i.nondeterministic],
         dtypes=[_dt.float64])
    def test_grad(self, device, dtype, op):
        """Backpropagating ``sum(out * w)`` on the device gives the CPU's gradients, on the
        device."""
        checked = 0
        for s in op.sample_inputs(dtype, _rng(op, dtype)):
            ctx = f"{op.id} {s} on {device} (grad)"
            leaves = [x for x in _flat(list(s.all_args()) + list(s.kwargs.values()))
                      if isinstance(x, ember.Tensor) and x.dtype == dtype and x.numel()]
            if not leaves:
                continue

            def run(to):
                copies = {}

                def leaf(t):
                    c = t.detach().to(to)
                    if any(t is x for x in leaves):
                        c.requires_grad_(True)
                        copies[id(t)] = c
                    return c

                out = op.get_op()(*_map(s.all_args(), leaf), **_map(s.kwargs, leaf))
                outs = [o for o in _flat(out) if isinstance(o, ember.Tensor) and o.requires_grad]
                if not outs:
                    return None
                total = sum(((o.real if o.is_complex() else o) *
                             ember.linspace(-1, 1, o.numel(), dtype=o.real.dtype,
                                            device=to).reshape(o.shape)).sum() for o in outs)
                grads = ember.autograd.grad(total, [copies[id(x)] for x in leaves],
                                            allow_unused=True)
                return grads

            try:
                want = run("cpu")
            except RuntimeError:  # not differentiable in these inputs (running statistics)
                continue
            if want is None:
                continue
            got = run(device)
            for g, w in zip(got, want):
                assert (g is None) == (w is None), ctx
                if g is not None:
                    _check_on(g, device, ctx)
                    assert_close(g.cpu(), w, rtol=1e-6, atol=1e-9, msg=ctx)
            checked += 1
        if not checked:
            pytest.skip("no differentiable sample")


instantiate_device_type_tests(TestOpsOnDevice, globals(), except_for="cpu")
_mark_xfails(globals())

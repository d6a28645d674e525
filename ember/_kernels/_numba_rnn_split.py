"""numba kernels of the fused LSTM layer's loops split by hidden units over threads (NOTE
[ LSTM steps split by hidden units ] in ember/_ops/_lstm_units.py).

Imported only when the fused kernels' backend is numba. Each call runs the whole time loop
of one worker: its slice of every step's recurrent product, through a pointer to the very
BLAS ``np.matmul`` uses (``gemm``, the address of its row-major ``cblas_?gemm``), and its
units' element-wise step, then waits at a barrier for the other workers before the next
step. The barrier is a counter per worker in ``sync`` (one cache line each), written with a
release store and read with acquire loads; a waiting worker spins briefly, then yields its
core (``sched_yield``, when its address is known), and gives up when ``sync[0]`` is set (a
worker failed before it started its loop).
"""

from __future__ import annotations

import platform

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.extending import intrinsic

from ._numba_rnn import _tanhf, gate_grads

_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")

#: barrier rounds spun (with a pause each) before a waiting worker starts yielding its core
SPINS = 20000
#: int64 slots between two workers' counters in ``sync`` (one 64-byte cache line)
LINE = 8


@intrinsic
def _gemm(typingctx, fptr, m, n, k, alpha, a, lda, b, ldb, c, ldc):
    """``C = alpha A @ B`` (beta 0) through the row-major ``cblas_?gemm`` at address
    ``fptr`` with 64-bit integers (NumPy's bundled OpenBLAS); ``a``, ``b``, ``c`` are
    addresses, ``alpha`` the arrays' float type."""
    sig = types.void(fptr, m, n, k, alpha, a, lda, b, ldb, c, ldc)

    def codegen(context, builder, signature, args):
        fp, m_, n_, k_, al, a_, lda_, b_, ldb_, c_, ldc_ = args
        ft = al.type
        i32, l64 = ir.IntType(32), ir.IntType(64)
        ptr = ft.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, l64, l64, l64, ft, ptr, l64,
                                               ptr, l64, ft, ptr, l64])
        fn = builder.inttoptr(fp, fnty.as_pointer())
        row_major, no_trans = ir.Constant(i32, 101), ir.Constant(i32, 111)
        builder.call(fn, [row_major, no_trans, no_trans, m_, n_, k_, al,
                          builder.inttoptr(a_, ptr), lda_, builder.inttoptr(b_, ptr), ldb_,
                          ir.Constant(ft, 0.0), builder.inttoptr(c_, ptr), ldc_])
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _load_acquire(typingctx, arr, i):
    """``arr[i]`` of a C-contiguous int64 vector, as an atomic load with acquire order."""
    sig = types.int64(arr, i)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, signature.args[0], ary, [args[1]])
        return builder.load_atomic(ptr, "acquire", 8)

    return sig, codegen


@intrinsic
def _store_release(typingctx, arr, i, v):
    """``arr[i] = v`` of a C-contiguous int64 vector, as an atomic store with release order."""
    sig = types.void(arr, i, v)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, signature.args[0], ary, [args[1]])
        builder.store_atomic(args[2], ptr, "release", 8)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _relax(typingctx, yield_ptr, spun):
    """One round of a spin-wait: a ``pause`` (x86), or, after ``SPINS`` rounds, a call of
    ``sched_yield`` at address ``yield_ptr`` (0: none)."""
    sig = types.void(yield_ptr, spun)

    def codegen(context, builder, signature, args):
        yp, spun_ = args
        late = builder.icmp_signed(">", spun_, ir.Constant(spun_.type, SPINS))
        can = builder.icmp_signed("!=", yp, ir.Constant(yp.type, 0))
        with builder.if_else(builder.and_(late, can)) as (then, otherwise):
            with then:
                fnty = ir.FunctionType(ir.IntType(32), [])
                builder.call(builder.inttoptr(yp, fnty.as_pointer()), [])
            with otherwise:
                if _X86:
                    fnty = ir.FunctionType(ir.VoidType(), [])
                    fn = cgutils.get_or_insert_function(builder.module, fnty,
                                                        "llvm.x86.sse2.pause")
                    builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always", cache=True)
def _barrier(sync, me, nw, n, yield_ptr):  # pragma: no cover (compiled)
    """Arrive at barrier round ``n`` and wait for every worker to arrive; False when the
    call was given up (``sync[0]`` set)."""
    _store_release(sync, LINE * (me + 1), n)
    spun = 0
    for k in range(nw):
        while _load_acquire(sync, LINE * (k + 1)) < n:
            if _load_acquire(sync, 0) != 0:
                return False
            spun += 1
            _relax(yield_ptr, spun)
    return True


@njit(inline="always", cache=True)
def _addr(a, offset):  # pragma: no cover (compiled)
    """The address of element ``offset`` (in elements) past ``a``'s first."""
    return np.int64(a.ctypes.data) + offset * a.itemsize


@njit(fastmath={"contract"}, error_model="numpy", nogil=True, cache=True)
def forward_units(gemm, yield_ptr, sync, me, nw, u0, u1, p0, p1, acts, wk, bk, has_bias,
                  h0, cs, tcs, out, raw, hprev, w_hr_t, has_proj, reverse, one,
                  half):  # pragma: no cover (compiled)
    """Worker ``me``'s share of the layer's forward loop: units ``[u0, u1)`` of the gates,
    the cell and the unprojected output, columns ``[p0, p1)`` of the output (and of the
    saved previous states). ``wk`` (P, 4U) holds the scaled recurrent weights of its units'
    gates (i, f, g, o, U columns each), ``bk`` (B, 4U) their scaled bias; ``acts`` (T, B, 4H)
    the input projections, replaced by the activations; ``w_hr_t`` (H, P) the projection's
    transpose. Returns False when given up."""
    steps, batch, hs4 = acts.shape
    hs = hs4 // 4
    u = u1 - u0
    p = out.shape[2]
    rec = np.empty((batch, 4 * u), acts.dtype)
    n = 0
    for idx in range(steps):
        t = steps - 1 - idx if reverse else idx
        hsrc = h0 if idx == 0 else out[t + 1 if reverse else t - 1]
        for b in range(batch):
            hprev[t, b, p0:p1] = hsrc[b, p0:p1]
        _gemm(gemm, batch, 4 * u, p, one, _addr(hsrc, 0), p, _addr(wk, 0), 4 * u,
              _addr(rec, 0), 4 * u)
        c_in = cs[t + 1] if reverse else cs[t]
        c = cs[t] if reverse else cs[t + 1]
        dest = raw[t] if has_proj else out[t]
        for b in range(batch):
            rb = rec[b]
            if has_bias:
                bb = bk[b]
                for j in range(4 * u):
                    rb[j] = rb[j] + bb[j]
            ab = acts[t, b]
            # one gate at a time: two arrays a loop, which LLVM vectorises
            for q in range(4):
                aq, rq = ab[q * hs + u0:q * hs + u1], rb[q * u:(q + 1) * u]
                if q == 2:
                    if acts.itemsize == 4:
                        for j in range(u):
                            aq[j] = _tanhf(aq[j] + rq[j])
                    else:
                        for j in range(u):
                            aq[j] = np.tanh(aq[j] + rq[j])
                elif acts.itemsize == 4:
                    for j in range(u):
                        aq[j] = _tanhf(aq[j] + rq[j]) * half + half
                else:
                    for j in range(u):
                        aq[j] = np.tanh(aq[j] + rq[j]) * half + half
            ai, af = ab[u0:u1], ab[hs + u0:hs + u1]
            ag, ao = ab[2 * hs + u0:2 * hs + u1], ab[3 * hs + u0:3 * hs + u1]
            cr, cb, tb, hb = c_in[b, u0:u1], c[b, u0:u1], tcs[t, b, u0:u1], dest[b, u0:u1]
            # (the dtype's branch outside the loops: a branch inside kept them scalar)
            if acts.itemsize == 4:
                for j in range(u):
                    cj = af[j] * cr[j] + ai[j] * ag[j]
                    cb[j] = cj
                    tj = _tanhf(cj)
                    tb[j] = tj
                    hb[j] = ao[j] * tj
            else:
                for j in range(u):
                    cj = af[j] * cr[j] + ai[j] * ag[j]
                    cb[j] = cj
                    tj = np.tanh(cj)
                    tb[j] = tj
                    hb[j] = ao[j] * tj
        n += 1
        if not _barrier(sync, me, nw, n, yield_ptr):
            return False
        if has_proj:
            if p1 > p0:
                _gemm(gemm, batch, p1 - p0, hs, one, _addr(raw[t], 0), hs,
                      _addr(w_hr_t, p0), p, _addr(out[t], p0), p)
            n += 1
            if not _barrier(sync, me, nw, n, yield_ptr):
                return False
    return True


@njit(error_model="numpy", nogil=True, cache=True)
def backward_units(gemm, yield_ptr, sync, me, nw, u0, u1, p0, p1, acts, tcs, cs, g_out,
                   has_gout, dh, dc, dxw, dhs, w_hh, w_hr, has_proj, reverse,
                   one):  # pragma: no cover (compiled)
    """Worker ``me``'s share of the layer's backward loop: the pre-activation gradients of
    its units' gates (``dxw`` (T, B, 4H)) and their cell gradient ``dc``, then columns
    ``[p0, p1)`` of the state gradient ``dh = d @ w_hh`` (``w_hh`` (4H, P) unscaled), after
    adding ``g_out[t]`` (the outputs' gradient) to them. With a projection ``w_hr`` (P, H)
    the units' share of ``dh @ w_hr`` comes first, and ``dhs`` keeps each step's ``dh``.
    Returns False when given up."""
    steps, batch, hs4 = acts.shape
    hs = hs4 // 4
    u = u1 - u0
    p = dh.shape[1]
    dhu = np.empty((batch, u), acts.dtype)
    n = 0
    for idx in range(steps):
        t = idx if reverse else steps - 1 - idx
        c_in = cs[t + 1] if reverse else cs[t]
        if has_gout:
            for b in range(batch):
                db, gb = dh[b], g_out[t, b]
                for j in range(p0, p1):
                    db[j] = db[j] + gb[j]
        if has_proj:
            for b in range(batch):
                dhs[t, b, p0:p1] = dh[b, p0:p1]
            n += 1
            if not _barrier(sync, me, nw, n, yield_ptr):
                return False
            _gemm(gemm, batch, u, p, one, _addr(dh, 0), p, _addr(w_hr, u0), hs,
                  _addr(dhu, 0), u)
        else:
            for b in range(batch):
                dhu[b] = dh[b, u0:u1]
        for b in range(batch):
            ab, db = acts[t, b], dxw[t, b]
            ai, af = ab[u0:u1], ab[hs + u0:hs + u1]
            ag, ao = ab[2 * hs + u0:2 * hs + u1], ab[3 * hs + u0:3 * hs + u1]
            di, df = db[u0:u1], db[hs + u0:hs + u1]
            dg, do = db[2 * hs + u0:2 * hs + u1], db[3 * hs + u0:3 * hs + u1]
            tr, cr, hr, dcr = tcs[t, b, u0:u1], c_in[b, u0:u1], dhu[b], dc[b, u0:u1]
            gate_grads(ai, af, ag, ao, di, df, dg, do, tr, cr, hr, dcr, u, one)
        n += 1
        if not _barrier(sync, me, nw, n, yield_ptr):
            return False
        if p1 > p0:
            _gemm(gemm, batch, p1 - p0, hs4, one, _addr(dxw[t], 0), hs4, _addr(w_hh, p0), p,
                  _addr(dh, p0), p)
    return True


_GEMM_SYMBOLS = ("scipy_cblas_{}gemm64_", "cblas_{}gemm64_")
_found: dict = {}


def blas_addresses(dtype):
    """``(gemm, sched_yield)``: the address of the 64-bit-integer row-major ``cblas_?gemm``
    of the OpenBLAS NumPy loaded (the one ``np.matmul`` calls and ember's BLAS hold sets to
    one thread) for ``dtype`` (float32 or float64), or 0 when there is none; and that of the
    C library's ``sched_yield``, or 0.

    Args:
        dtype: a NumPy float dtype.

    Returns:
        tuple[int, int]: the two addresses.

    Example::

        >>> gemm, _ = blas_addresses(np.dtype(np.float32))
        >>> isinstance(gemm, int)
        True
    """
    key = np.dtype(dtype).char
    if key not in _found:
        _found[key] = (_gemm_address("s" if key == "f" else "d"), _yield_address())
    return _found[key]


def _gemm_address(prefix):
    import ctypes

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return 0
    paths = [i["filepath"] for i in threadpool_info()
             if i.get("internal_api") == "openblas" and "numpy" in i.get("filepath", "")]
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _GEMM_SYMBOLS:
            fn = getattr(lib, name.format(prefix), None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value or 0
    return 0


def _yield_address():
    import ctypes

    try:
        fn = ctypes.CDLL(None).sched_yield
    except (OSError, AttributeError):
        return 0
    return ctypes.cast(fn, ctypes.c_void_p).value or 0

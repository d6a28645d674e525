"""numba kernels of the batching rules (imported only when numba is installed and the fused
kernels' backend is ``numba``: NOTE [ Fused kernels ] in ember/_kernels/__init__.py).

Compiled with ``cache=True`` and ``nogil=True`` as the other kernels, and without fast-math
flags: each output element is one IEEE product, bit for bit NumPy's.

NOTE [ Streaming stores for large products ]
A batch of outer products larger than the caches is written once and not read again by the
rule (per-sample weight gradients: 25 MB for a 784-128-10 MLP over 64 examples). An ordinary
store first reads the destination's cache line from memory (to own it), so such a write
moves twice its size through memory; on the shared development machine, with other
processes evicting the caches, the 25 MB took 2.5-3.6 ms that way against ~1.1 ms when
the destination happened to be cached. Non-temporal ("streaming") stores write whole lines
without reading them first: 1.07-1.2 ms in both cases. ``outer_rows_stream`` writes each
row's aligned middle with 32-byte streaming stores of ``s * b`` (``_stream_mul``, LLVM's
``!nontemporal`` store: ``vmovntps`` on x86-64; a plain store where the target has none)
and the unaligned ends with ordinary stores, then fences them (``sfence``) before another
thread may read the rows; the products are the same IEEE products. The caller uses it only
above ``STREAM_MIN_BYTES`` (smaller results stay in cache, where the next op reads them) and
on x86-64 (``HAS_STREAM``).
"""

from __future__ import annotations

import platform

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

#: results at least this large are written with streaming stores (NOTE [ Streaming stores
#: for large products ]): twice a core's L2 on the development machine
STREAM_MIN_BYTES = 4 << 20

_VECTOR_BYTES = 32


@intrinsic
def _stream_mul(typingctx, out, out_at, b, b_at, s):
    """``out[out_at:out_at + w] = s * b[b_at:b_at + w]`` by one streaming store of
    ``w = 32 // itemsize`` elements; ``out[out_at]`` must be 32-byte aligned."""
    sig = types.void(out, out_at, b, b_at, s)

    def codegen(context, builder, sig, args):
        o, oi, bb, bi, sv = args
        oty, bty = sig.args[0], sig.args[2]
        elem = context.get_value_type(oty.dtype)
        width = _VECTOR_BYTES // context.get_abi_sizeof(elem)
        oarr = context.make_array(oty)(context, builder, o)
        barr = context.make_array(bty)(context, builder, bb)
        optr = cgutils.get_item_pointer(context, builder, oty, oarr, [oi])
        bptr = cgutils.get_item_pointer(context, builder, bty, barr, [bi])
        vt = ir.VectorType(elem, width)
        bv = builder.load(builder.bitcast(bptr, vt.as_pointer()),
                          align=context.get_abi_sizeof(elem))
        splat = ir.Constant(vt, ir.Undefined)
        for k in range(width):
            splat = builder.insert_element(splat, sv, ir.Constant(ir.IntType(32), k))
        st = builder.store(builder.fmul(bv, splat), builder.bitcast(optr, vt.as_pointer()),
                           align=_VECTOR_BYTES)
        st.set_metadata("nontemporal",
                        builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _store_fence(typingctx):
    """``sfence``: the streaming stores before it are visible to other threads after it."""
    sig = types.void()

    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                            "llvm.x86.sse.sfence")
        builder.call(fn, [])
        return context.get_dummy_value()

    return sig, codegen


#: streaming stores are written for x86-64 only (the fence above is an x86 instruction)
HAS_STREAM = platform.machine().lower() in ("x86_64", "amd64")


@njit(cache=True, nogil=True)
def outer_rows(a, b, out):  # pragma: no cover - compiled
    """``out[i, j, l] = a[i, j] * b[i, l]`` for C-contiguous a (B, N), b (B, M) and out
    (B, N, M): a batch of outer products (NOTE [ Batched outer products ] in
    _batch_kernels.py)."""
    for i in range(a.shape[0]):
        brow = b[i]
        for j in range(a.shape[1]):
            s = a[i, j]
            orow = out[i, j]
            for m in range(brow.shape[0]):
                orow[m] = s * brow[m]


@njit(cache=True, nogil=True, boundscheck=False)
def outer_rows_stream(a, b, out):  # pragma: no cover - compiled
    """``outer_rows`` written with streaming stores (NOTE [ Streaming stores for large
    products ]); same arguments, same values."""
    n, m = a.shape[1], b.shape[1]
    item = out.itemsize
    width = _VECTOR_BYTES // item
    flat = out.reshape(-1)
    bflat = b.reshape(-1)
    base = flat.ctypes.data
    k = 0
    for i in range(a.shape[0]):
        bi = i * m
        for j in range(n):
            s = a[i, j]
            # ordinary stores up to the first 32-byte boundary, streaming ones to the last
            head = ((-(base + item * k)) % _VECTOR_BYTES) // item
            if head > m:
                head = m
            for l in range(head):
                flat[k + l] = s * bflat[bi + l]
            l = head
            while l + width <= m:
                _stream_mul(flat, k + l, bflat, bi + l, s)
                l += width
            while l < m:
                flat[k + l] = s * bflat[bi + l]
                l += 1
            k += m
    _store_fence()

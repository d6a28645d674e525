"""Tensor contractions: tensordot, inner, kron, einsum and chains of matrix products."""

from __future__ import annotations

import builtins
import operator

import numpy as np

from .. import _dispatch
from .._core.tensor import Tensor
from ._registry import Op, public, quiet_kernel
from .indexing import multilinear_jvp  # forward-mode rules
from .linalg import _LOWP, _conj, _contig, _cpp_name, _promote, check_tensor, matmul


# ------------------------------------------------------------------------------------------------
# tensordot, inner, kron


@quiet_kernel
def _tensordot_kernel(xp, a, b, *, dims_a, dims_b):
    a, b = _contig(xp, a), _contig(xp, b)  # see lowp()
    if a.dtype in _LOWP:
        return xp.tensordot(a.astype(np.float32), b.astype(np.float32),
                            axes=(dims_a, dims_b)).astype(a.dtype)
    if a.dtype == np.bool_:
        return xp.tensordot(a.astype(np.int64), b.astype(np.int64),
                            axes=(dims_a, dims_b)).astype(bool)
    return xp.asarray(xp.tensordot(a, b, axes=(dims_a, dims_b)))


def _tensordot_vjp(g, a, b, *, dims_a, dims_b):
    # out dims: a's free dims (in order) then b's free dims. Contract g with the other
    # operand over the other operand's free dims and then permute into place.
    na, nb = a.dim(), b.dim()
    free_a = [i for i in range(na) if i not in dims_a]
    free_b = [i for i in range(nb) if i not in dims_b]
    ka = len(free_a)
    # grad_a[free_a, dims_a] = sum over free_b of g[free_a, free_b] * conj(b)[dims_b, free_b]
    ga = tensordot(g, _conj(b), dims=(list(range(ka, g.dim())), free_b))
    # tensordot keeps the uncontracted dims in their original order: ga holds free_a, then
    # b's contracted dims in increasing order, each standing for its partner in dims_a
    order_a = free_a + [dims_a[dims_b.index(d)] for d in sorted(dims_b)]
    gb = tensordot(_conj(a), g, dims=(free_a, list(range(ka))))
    order_b = [dims_b[dims_a.index(d)] for d in sorted(dims_a)] + free_b
    return _unpermute(ga, order_a), _unpermute(gb, order_b)


def _unpermute(t, order):
    if order == sorted(order):
        return t
    return t.permute(tuple(np.argsort(order).tolist()))


tensordot_op = Op("tensordot", _tensordot_kernel, vjp=_tensordot_vjp)
multilinear_jvp(tensordot_op, (0, 1))


@public(method=False)
def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` of ``a`` with ``dims`` of ``b``.

    ``dims`` is an int (the last ``dims`` of ``a`` with the first of ``b``), or a pair of
    lists of dims.
    """
    check_tensor("tensordot", a, "a", 1)
    check_tensor("tensordot", b, "b", 2)
    if a._data.dtype != b._data.dtype:
        raise RuntimeError("both inputs should have same dtype")  # PyTorch's words
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        n = int(dims)
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
        if n > a.dim() or n > b.dim():
            raise RuntimeError(
                f"tensordot: dims {n} exceeds the number of dims of an operand "
                f"({a.dim()} and {b.dim()})")
        da = list(range(a.dim() - n, a.dim()))
        db = list(range(n))
    else:
        try:
            da, db = dims
        except (TypeError, ValueError):
            raise TypeError(
                "tensordot(): argument 'dims' must be an int or a pair of lists of ints, "
                f"got {dims!r}") from None
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError(
                f"tensordot: both dimension lists should have same length, got {len(da)} "
                f"and {len(db)}")
        from .._core.checks import wrap_dim

        da = [wrap_dim(d, a.dim(), "tensordot") for d in da]
        db = [wrap_dim(d, b.dim(), "tensordot") for d in db]
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(
                f"tensordot: contracted dimensions need to match, but first has size "
                f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in dim {y}")
    if a._data.dtype == np.bool_:
        # PyTorch folds the operands to matrices for one GEMM, which refuses bool whenever
        # it has arithmetic to do (a non-empty result over a non-empty contraction)
        k = int(np.prod([a.shape[d] for d in da]))
        n_out = a.numel() * b.numel() // max(k * k, 1) if k else 0
        if k and n_out:
            kernel = "dot" if len(da) == a.dim() and len(db) == b.dim() else "addmm_impl_cpu_"
            raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    if isinstance(out, Tensor) and out.dtype != a.dtype:
        raise RuntimeError(
            f"tensordot: Expected the output tensor to have dtype {a.dtype.scalar_name}, but "
            f"got an output tensor with dtype {out.dtype.scalar_name}")
    return _dispatch.apply(tensordot_op, (a, b), {"dims_a": tuple(da), "dims_b": tuple(db)},
                           out)


@public
def inner(input, other, *, out=None):
    """Sum of products over the last dim of both (scalars multiply)."""
    check_tensor("inner", input, "input", 1)
    check_tensor("inner", other, "other", 2)
    if input.dim() and other.dim() and input.dtype != other.dtype:
        # only the 0-d case (a product) promotes in PyTorch
        raise RuntimeError("inner: both inputs should have same dtype")
    if input.dim() == 0 or other.dim() == 0:
        # a product, with mul's rules for ``out=`` (a bool product into an int64 out)
        from .arithmetic import mul

        return mul(input, other, out=out)
    a, b = _promote("inner", input, other)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"inner: inner() the last dimension must match on both input tensors but got "
            f"shapes {list(a.shape)} and {list(b.shape)}")
    if a.dim() == b.dim() == 1 and a._data.dtype == np.bool_:
        raise NotImplementedError('"dot" not implemented for \'Bool\'')  # even when empty
    return tensordot(a, b, dims=([a.dim() - 1], [b.dim() - 1]), out=out)


def _kron_kernel(xp, a, b):
    n = builtins.max(a.ndim, b.ndim)
    a = a.reshape((1,) * (n - a.ndim) + a.shape)
    b = b.reshape((1,) * (n - b.ndim) + b.shape)
    # interleave: result[i0*j0..., ] = a[i...] * b[j...]
    r = a.reshape(sum(((s, 1) for s in a.shape), ())) * b.reshape(
        sum(((1, s) for s in b.shape), ()))
    return r.reshape(tuple(x * y for x, y in zip(a.shape, b.shape)))


def _kron_vjp(g, a, b):
    n = builtins.max(a.dim(), b.dim())
    sa = (1,) * (n - a.dim()) + tuple(a.shape)
    sb = (1,) * (n - b.dim()) + tuple(b.shape)
    g4 = g.reshape(sum(((x, y) for x, y in zip(sa, sb)), ()))
    odd = tuple(range(1, 2 * n, 2))
    even = tuple(range(0, 2 * n, 2))
    ga = (g4 * _conj(b).reshape(sum(((1, s) for s in sb), ()))).sum(odd)
    gb = (g4 * _conj(a).reshape(sum(((s, 1) for s in sa), ()))).sum(even)
    return ga.reshape(a.shape), gb.reshape(b.shape)


kron_op = Op("kron", _kron_kernel, vjp=_kron_vjp)
multilinear_jvp(kron_op, (0, 1))


@public
def kron(input, other, *, out=None):
    """Kronecker product.

    Differences from PyTorch:
        ``out=`` a tensor whose storage cannot be resized (one sharing memory with a NumPy array)
        and must grow: PyTorch raises RuntimeError, ember resizes it.
    """
    check_tensor("kron", input, "input", 1)
    check_tensor("kron", other, "other", 2)
    a, b = _promote("kron", input, other)
    return _dispatch.apply(kron_op, (a, b), {}, out)


# ------------------------------------------------------------------------------------------------
# einsum


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _parse_einsum(eq, ndims):
    """Explicit subscripts for ``eq``: (list of input label strings, output labels).

    Ellipses are replaced by fresh labels (right-aligned, as broadcasting), and an implicit
    output (no ``->``) is the labels seen once, in alphabetical order, after the ellipsis.
    """
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    ins = lhs.split(",")
    if len(ins) != len(ndims):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(ndims) > len(ins) else
            "einsum(): fewer operands were provided than specified in the equation")
    used = set(c for c in eq if c.isalpha())
    for c in eq:
        if not (c.isalpha() or c in ",.->"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {eq.index(c)} in the "
                             f"equation string, subscripts must be in [a-zA-Z]")
    fresh = [c for c in _LETTERS if c not in used]
    ell_n = 0
    for s, n in zip(ins, ndims):
        if "..." in s:
            ell_n = builtins.max(ell_n, n - (len(s) - 3))
    ell = "".join(fresh[:ell_n])
    out_ins = []
    for s, n in zip(ins, ndims):
        if "..." in s:
            k = n - (len(s) - 3)
            if k < 0:
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({len(s) - 3}) is "
                    f"more than the number of dimensions ({n}) for operand")
            s = s.replace("...", ell[ell_n - k:])
        elif len(s) != n:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(s)}) does not "
                f"match the number of dimensions ({n}) for operand "
                f"{len(out_ins)} and no ellipsis was given")
        out_ins.append(s)
    if rhs is None:
        counts = {}
        for s in out_ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
        for c in rhs:
            if not any(c in s for s in out_ins):
                raise RuntimeError(
                    f"einsum(): output subscript {c} does not appear in the equation for any "
                    "input operand")
            if rhs.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in "
                                 "the output")
    return out_ins, rhs


def _einsum_kernel(xp, *arrays, eq, optimize):
    arrays = [_contig(xp, a) for a in arrays]  # see lowp()
    if arrays and arrays[0].dtype in _LOWP:
        dt = arrays[0].dtype
        up = [a.astype(np.float32) for a in arrays]
        return xp.asarray(xp.einsum(eq, *up, optimize=optimize)).astype(dt)
    if arrays and arrays[0].dtype == np.bool_:
        return xp.asarray(xp.einsum(eq, *[a.astype(np.int64) for a in arrays])).astype(bool)
    return xp.asarray(xp.einsum(eq, *arrays, optimize=optimize))


def _einsum_vjp(g, *ops, eq, optimize):
    lhs, rhs = eq.split("->")
    ins = lhs.split(",")
    sizes = {}
    for s, t in zip(ins, ops):
        for c, n in zip(s, t.shape):
            if n != 1 or c not in sizes:
                sizes[c] = n
    used = set(eq)
    fresh = iter(c for c in _LETTERS if c not in used)
    grads = []
    from .creation import ones

    for i, s in enumerate(ins):
        # relabel repeated labels (diagonals) with fresh ones tied by identity matrices
        target, extra_subs, extra_ops = [], [], []
        seen = set()
        for c in s:
            if c in seen:
                f = next(fresh)
                target.append(f)
                extra_subs.append(c + f)
                extra_ops.append(_eye(sizes[c], g))
            else:
                seen.add(c)
                target.append(c)
        subs = [rhs] + [ins[j] for j in range(len(ins)) if j != i] + extra_subs
        operands = [g] + [_conj(ops[j]) for j in range(len(ins)) if j != i] + extra_ops
        avail = set("".join(subs))
        missing = "".join(c for c in dict.fromkeys(s) if c not in avail)
        if missing:  # labels summed within operand i only: broadcast the gradient over them
            subs.append(missing)
            operands.append(ones(*[sizes[c] for c in missing], dtype=g.dtype,
                                 device=g.device))
        grads.append(einsum(",".join(subs) + "->" + "".join(target), *operands))
    return tuple(grads)


def _eye(n, like):
    from .creation import zeros

    e = zeros(n, n, dtype=like.dtype, device=like.device)
    e._data[np.arange(n), np.arange(n)] = 1
    return e


einsum_op = Op("einsum", _einsum_kernel, vjp=_einsum_vjp)
multilinear_jvp(einsum_op, None)


@public(method=False)
def einsum(*args):
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` or the sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.
    """
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        eq, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    else:
        eq, operands = _sublist_equation(args)
    for i, t in enumerate(operands):
        check_tensor("einsum", t, f"operands[{i}]")
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    d0 = operands[0]._data.dtype
    mixed = any(t._data.dtype != d0 for t in operands[1:])
    ins, rhs = _parse_einsum(eq, [t.dim() for t in operands])
    if mixed:
        operands = _einsum_mixed(ins, rhs, operands)
    sizes = {}
    for k, (s, t) in enumerate(zip(ins, operands)):
        for c, n in zip(s, t.shape):
            m = sizes.get(c)
            if m is not None and m != n and m != 1 and n != 1:
                raise RuntimeError(
                    f"einsum(): operands do not broadcast with remapped shapes "
                    f"(original->remapped): subscript '{c}' has size {n} for operand {k} "
                    f"which does not broadcast with previously seen size {m}")
            if m is None or m == 1:
                sizes[c] = n
    # size-1 labels broadcast against larger ones in PyTorch; NumPy refuses, so expand
    ops = []
    for s, t in zip(ins, operands):
        want = tuple(sizes[c] for c in s)
        if tuple(t.shape) != want and len(set(s)) == len(s):
            t = t.expand(*want)
        ops.append(t)
    ops = _einsum_torch_dtypes(ins, rhs, ops, sizes)
    full = ",".join(ins) + "->" + rhs
    optimize = len(ops) > 2
    return _dispatch.apply(einsum_op, tuple(ops), {"eq": full, "optimize": optimize})


def _einsum_dtype_error(operands):
    other = next(t for t in operands if t._data.dtype != operands[0]._data.dtype)
    if operands[0]._data.dtype == np.bool_:
        # torch's bmm looks for a bool kernel before it compares the dtypes
        raise NotImplementedError('"bmm" not implemented for \'Bool\'')
    # (its batched product's words: NOTE [ Product dtype messages ] in linalg.py)
    raise RuntimeError(f"expected scalar type {operands[0].dtype.scalar_name} but "
                       f"found {other.dtype.scalar_name}")


def _einsum_mixed(ins, rhs, operands):
    """Operands of different dtypes, as PyTorch's pairwise contraction takes them: with no
    label to contract it multiplies (the dtypes promote); otherwise it runs ``bmm``, which
    refuses mixed dtypes unless the product is empty or contracts an empty dim (it then
    skips the check and the result takes the second operand's dtype; replayed for two
    operands)."""
    import functools

    from .._core import dtype as _dt

    seen = {}
    wide = set()  # labels of a size other than 1 somewhere
    for s, t in zip(ins, operands):
        for c in set(s):
            seen[c] = seen.get(c, 0) + 1
        wide.update(c for c, n in zip(s, t.shape) if n != 1)
    # a label of size 1 is no contraction: PyTorch multiplies over it, and the dtypes promote
    if not any(k > 1 and c not in rhs and c in wide for c, k in seen.items()):
        d = functools.reduce(_dt.promote_types, [t.dtype for t in operands])
        return tuple(t.to(d) for t in operands)
    if len(operands) != 2:
        _einsum_dtype_error(operands)
    a, b = operands
    shared = (set(ins[0]) & set(ins[1])) - set(rhs)
    # the labels the product sees (one operand's own labels the output lacks are summed first)
    used = [(c, n) for s, t in zip(ins, operands) for c, n in zip(s, t.shape)
            if c in rhs or c in shared]
    if any(n == 0 for _, n in used):
        return a.to(b.dtype), b
    _einsum_dtype_error(operands)


def _einsum_torch_dtypes(ins, rhs, ops, sizes):
    """The operands as PyTorch's einsum types them for integer and bool inputs.

    PyTorch first sums each operand over the labels only it has and the output lacks (a
    sum: integers and bool become int64), multiplies when nothing is left to contract, and
    contracts the rest with ``bmm`` (which refuses bool when it has arithmetic to do, and
    mixed dtypes). For two operands or one that is replayed here; with more, only the bool
    refusal."""
    d = ops[0]._data.dtype
    if d.kind not in "biu":
        return ops
    from .._core import dtype as _dt

    counts = {}
    for s in ins:
        for c in set(s):
            counts[c] = counts.get(c, 0) + 1
    solo = [any(counts[c] == 1 and c not in rhs for c in s) for s in ins]
    shared = [c for c in counts if counts[c] > 1 and c not in rhs]
    if len(ops) <= 2:
        ops = [t.to(_dt.int64) if sm else t for t, sm in zip(ops, solo)]
        kinds = {t._data.dtype for t in ops}
        if len(kinds) > 1:
            if shared:
                other = next(t for t in ops if t.dtype != _dt.int64)
                raise RuntimeError(
                    f"expected scalar type Long but found {other.dtype.scalar_name}")
            ops = [t.to(_dt.int64) for t in ops]  # an element-wise product promotes
    if ops[0]._data.dtype == np.bool_ and len(ops) > 1:
        k = int(np.prod([sizes[c] for c in shared]))
        n_out = int(np.prod([sizes[c] for c in rhs]))
        if shared and k and n_out:
            raise NotImplementedError('"bmm" not implemented for \'Bool\'')
    return ops


def _sublist_equation(args):
    ops, subs = list(args[0::2]), list(args[1::2])
    out = None
    if len(args) % 2 == 1:
        out = args[-1]
        ops = ops[:-1]

    def lab(sub):
        s = ""
        for v in sub:
            if v is Ellipsis:
                s += "..."
            else:
                v = operator.index(v)
                if not 0 <= v < 52:
                    raise ValueError(
                        f"einsum(): subscript in subscript list is not within the valid range "
                        f"[0, 52), got {v}")
                s += _LETTERS[v]
        return s

    eq = ",".join(lab(s) for s in subs)
    if out is not None:
        eq += "->" + lab(out)
    return eq, ops


# ------------------------------------------------------------------------------------------------
# chain products


@public(method=False)
def chain_matmul(*matrices, out=None):
    """Product of a chain of 2-D matrices (deprecated in PyTorch; see linalg.multi_dot)."""
    from .._settings import warn_at_caller

    warn_at_caller(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
        "than multiple parameters.", UserWarning, once=True)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        check_tensor("chain_matmul", t, "matrices")
        if t.dim() != 2:
            raise RuntimeError(
                f"chain_matmul(): Tensor dimension is {t.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        r = matrices[0].clone()
        return r if out is None else _dispatch.write_out("chain_matmul", out, r)
    return multi_dot(matrices, out=out)


def multi_dot(tensors, *, out=None):
    """Product of two or more matrices, in the cheapest association order. The first and
    last may be 1-D (a row and a column vector)."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError("linalg.multi_dot(): argument 'tensors' must be a list of Tensors")
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        check_tensor("linalg.multi_dot", t, "tensors")
        want = (1, 2) if i in (0, n - 1) else (2,)
        if t.dim() not in want:
            which = "first" if i == 0 else "last" if i == n - 1 else None
            if which:
                raise RuntimeError(
                    f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.dim()}D")
            raise RuntimeError(
                f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    d0 = tensors[0]._data.dtype
    for i, t in enumerate(tensors[1:], 1):  # (by position: ``index`` would compare tensors)
        if t._data.dtype != d0:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_cpp_name(tensors[0].dtype)} and tensor {i} {_cpp_name(t.dtype)}")
    ts = list(tensors)
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(n - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} "
                f"and {list(tensors[i + 1].shape)} cannot be multiplied")
    r = _chain(ts, _chain_order([t.shape[0] for t in ts] + [ts[-1].shape[1]]), 0, n - 1)
    if first_vec and last_vec:
        r = r.reshape(())
    elif first_vec:
        r = r.squeeze(0)
    elif last_vec:
        r = r.squeeze(-1)
    return r if out is None else _dispatch.write_out("linalg.multi_dot", out, r)


def _chain_order(p):
    """The classic matrix-chain dynamic programme: split points minimising multiplications."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(ts, split, i, j):
    if i == j:
        return ts[i]
    k = split[i][j]
    return matmul(_chain(ts, split, i, k), _chain(ts, split, k + 1, j))



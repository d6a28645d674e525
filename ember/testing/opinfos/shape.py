"""OpInfo entries for ember/_ops/shape.py (views) and ember/_ops/join.py (join, split,
tile, flip, triangles, diagonals)."""

import numpy as np

from .._opinfo import ALL, COMPLEX, ErrorInput, OpInfo, SampleInput
from ..._core import dtype as _dt

NO_BF16 = tuple(d for d in ALL if d is not _dt.bfloat16)
NONCONTIG_VIEW = "a view of the test's non-contiguous layout is impossible (torch raises too)"


def _t(shape, dtype, rng, **kw):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng, **kw)


def _meth(name):
    """The method ``Tensor.<name>`` as a function, for ember and for torch."""

    def call(x, *args, **kwargs):
        return getattr(x, name)(*args, **kwargs)

    call.__name__ = name
    return call


def _prop(name):
    return lambda x: getattr(x, name)


def _torch_meth(name):
    return lambda torch: _meth(name)


def _torch_prop(name):
    return lambda torch: _prop(name)


def _torch_resolved(fn):
    """torch's H/mH/adjoint return lazily conjugated views; resolve them for comparison."""
    return lambda torch: lambda x: fn(x).resolve_conj()


def _samples(*specs):
    """``(shape, args, kwargs)`` triples -> a sample generator."""

    def gen(dtype, rng):
        for shape, args, kwargs in specs:
            yield SampleInput(_t(shape, dtype, rng), *args, name=f"{shape}{args}{kwargs or ''}",
                              **kwargs)

    return gen


def _errors(*specs):
    """``(shape, args, error type, match)`` -> an error-input generator (float32 inputs)."""

    def gen(rng):
        for shape, args, err, match in specs:
            yield ErrorInput(SampleInput(_t(shape, _dt.float32, rng), *args), err, match)

    return gen


def _list_samples(*specs):
    """``([shapes], args, kwargs)`` -> samples whose input is a list of tensors."""

    def gen(dtype, rng):
        for shapes, args, kwargs in specs:
            ts = [_t(s, dtype, rng) for s in shapes]
            yield SampleInput(ts, *args, name=f"{shapes}{args}{kwargs or ''}", **kwargs)

    return gen


# ------------------------------------------------------------------------------------------------
# NumPy references


def _ref_flatten(a, start_dim=0, end_dim=-1):
    if a.ndim == 0:
        return a.reshape(1)
    s, e = start_dim % a.ndim, end_dim % a.ndim
    return a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:])


def _ref_unflatten(a, dim, sizes):
    d = dim % a.ndim
    return a.reshape(a.shape[:d] + tuple(sizes) + a.shape[d + 1:])


def _ref_squeeze(a, dim=None):
    if dim is None or a.ndim == 0:
        return np.squeeze(a)
    dims = (dim,) if isinstance(dim, int) else dim
    return np.squeeze(a, tuple(d % a.ndim for d in dims if a.shape[d] == 1))


def _ref_narrow(a, dim, start, length):
    return np.take(a, range(start % a.shape[dim], start % a.shape[dim] + length), axis=dim)


def _ref_unfold(a, dimension, size, step):
    if a.ndim == 0:
        return a.reshape(1)[:size]
    dimension %= a.ndim
    w = np.lib.stride_tricks.sliding_window_view(a, size, axis=dimension)
    return np.take(w, range(0, w.shape[dimension], step), axis=dimension)


def _ref_as_strided(a, size, stride, storage_offset=0):
    flat = np.ascontiguousarray(a).reshape(-1)
    n = flat.itemsize
    return np.lib.stride_tricks.as_strided(flat[storage_offset:], size,
                                           [s * n for s in stride]).copy()


def _ref_split(a, split_size_or_sections, dim=0):
    n = a.shape[dim]
    if split_size_or_sections == 0:
        return (a,)
    if isinstance(split_size_or_sections, int):
        idx = list(range(split_size_or_sections, n, split_size_or_sections))
    else:
        idx = list(np.cumsum(split_size_or_sections)[:-1])
    return tuple(np.split(a, idx, axis=dim))


def _ref_chunk(a, chunks, dim=0):
    size = -(-a.shape[dim] // chunks)
    return _ref_split(a, size, dim)


def _ref_repeat(a, *repeats):
    if len(repeats) == 1 and isinstance(repeats[0], tuple):
        repeats = repeats[0]
    return np.tile(a.reshape((1,) * (len(repeats) - a.ndim) + a.shape), repeats)


def _ref_diag_embed(a, offset=0, dim1=-2, dim2=-1):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    i = np.arange(a.shape[-1])
    rows, cols = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., rows, cols] = a
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _ref_stack_fn(fn):
    return lambda tensors, **kw: fn(tensors)


def _ref_cat(tensors, dim=0, axis=None):
    dim = dim if axis is None else axis
    tensors = [t for t in tensors if not (t.ndim == 1 and t.size == 0)]
    return np.concatenate(tensors, axis=dim)


def _ref_swapaxes(a, d0, d1):
    return np.swapaxes(a, d0, d1) if a.ndim else a


def _ref_flip(a, dims):
    return np.flip(a, dims) if a.ndim else a


def _ref_expand(a, *sizes):
    sizes = sizes[0] if len(sizes) == 1 and isinstance(sizes[0], tuple) else sizes
    lead = len(sizes) - a.ndim
    return np.broadcast_to(a, [a.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes)])


def _ref_view_dtype(a, dtype):
    return a.view(_dt.to_np[dtype])


def _ref_view_as_complex(a):
    return a[..., 0] + 1j * a[..., 1]


def _ref_view_as_real(a):
    return np.stack([a.real, a.imag], -1)


def _ref_mT(a):
    return np.swapaxes(a, -2, -1)


def _ref_H(a):
    return np.conj(a.T) if a.ndim else np.conj(a)


def _ref_mH(a):
    return np.conj(np.swapaxes(a, -2, -1)) if a.ndim else np.conj(a)


def _ref_repeat_interleave(a, repeats, dim=None, output_size=None):
    return np.repeat(a if dim is not None else a.reshape(-1), repeats,
                     axis=0 if dim is None else dim)


# ------------------------------------------------------------------------------------------------
# sample generators with special inputs


def _sample_view_dtype(dtype, rng):
    same = {1: _dt.uint8 if dtype is not _dt.uint8 else _dt.int8,
            2: _dt.int16, 4: _dt.int32, 8: _dt.int64, 16: _dt.complex128}
    yield SampleInput(_t((3, 4), dtype, rng), same[dtype.itemsize], name="same_size")
    if dtype.itemsize > 1:
        yield SampleInput(_t((3, 4), dtype, rng), _dt.uint8, name="smaller")
    if dtype.itemsize < 8:
        yield SampleInput(_t((2, 8), dtype, rng), _dt.int64, name="larger")


def _sample_binary_shape(method_arg_shape):
    def gen(dtype, rng):
        for a, b in method_arg_shape:
            yield SampleInput(_t(a, dtype, rng), _t(b, dtype, rng), name=f"{a}{b}")

    return gen


def _sample_broadcast_tensors(dtype, rng):
    yield SampleInput(_t((3, 1), dtype, rng), _t((4,), dtype, rng), name="two")
    yield SampleInput(_t((2, 1, 3), dtype, rng), _t((), dtype, rng), _t((4, 1), dtype, rng),
                      name="three")


def _sample_as_strided(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), (2, 2), (1, 2), name="default_offset")
    yield SampleInput(_t((3, 4), dtype, rng), (2, 3), (4, 1), 1, name="offset")
    yield SampleInput(_t((9,), dtype, rng), (3, 3), (2, 1), name="overlapping")


def _sample_view_as_complex(dtype, rng):
    yield SampleInput(_t((3, 2), dtype, rng), name="(3, 2)")
    yield SampleInput(_t((2, 3, 2), dtype, rng), name="(2, 3, 2)")
    yield SampleInput(_t((2,), dtype, rng), name="(2,)")


def _sample_repeat_interleave(dtype, rng):
    import ember

    yield SampleInput(_t((2, 3), dtype, rng), 2, name="int_flat")
    yield SampleInput(_t((2, 3), dtype, rng), 2, dim=1, name="int_dim")
    yield SampleInput(_t((3, 2), dtype, rng), ember.tensor([1, 0, 2]), dim=0, name="tensor")
    yield SampleInput(_t((3, 2), dtype, rng), ember.tensor([2]), dim=-1, output_size=4,
                      name="tensor_one")


def _sample_cat(dtype, rng):
    t = lambda *s: _t(s, dtype, rng)  # noqa: E731
    yield SampleInput([t(2, 3), t(1, 3)], name="dim0")
    yield SampleInput([t(2, 3), t(2, 2), t(2, 0)], 1, name="dim1")
    yield SampleInput([t(2, 3), t(2, 1)], -1, name="neg_dim")
    yield SampleInput([t(2, 3), t(0)], name="legacy_empty")
    yield SampleInput([t(4)], name="single")


def _sample_cat_promote(dtype, rng):
    yield SampleInput([_t((2,), dtype, rng), _t((3,), _dt.float32, rng)], name="with_float")
    yield SampleInput([_t((2,), _dt.int32, rng), _t((3,), dtype, rng)], name="with_int32")


def _sample_tensor_split(dtype, rng):
    import ember

    x = lambda: _t((5, 4), dtype, rng)  # noqa: E731
    yield SampleInput(x(), 3, name="sections")
    yield SampleInput(x(), [1, 3], name="indices")
    yield SampleInput(x(), (3, 1, 7), name="unordered_indices")
    yield SampleInput(x(), 3, 1, name="sections_dim1")
    yield SampleInput(x(), ember.tensor([2]), name="tensor_indices")


# ------------------------------------------------------------------------------------------------
# error inputs needing special tensors


def _errors_view(rng):
    x = _t((3, 4), _dt.float32, rng)
    yield ErrorInput(SampleInput(x, 5), RuntimeError, "invalid for input of size 12")
    yield ErrorInput(SampleInput(x, -1, -1), RuntimeError, "only one dimension")
    yield ErrorInput(SampleInput(x, 3.0), TypeError, "")
    yield ErrorInput(SampleInput(x.narrow(1, 0, 3), _dt.float64),
                     RuntimeError, "divisible by 2")


def _errors_view_as_complex(rng):
    yield ErrorInput(SampleInput(_t((3, 4), _dt.float32, rng)), RuntimeError, "size 2")
    yield ErrorInput(SampleInput(_t((4, 2), _dt.float32, rng).t()), RuntimeError, "")
    yield ErrorInput(SampleInput(_t((3, 2), _dt.int64, rng)), RuntimeError, "")


def _errors_cat(rng):
    import ember

    yield ErrorInput(SampleInput([ember.ones(3, 4), ember.ones(2, 3)]), RuntimeError,
                     "Sizes of tensors must match except in dimension 0")
    yield ErrorInput(SampleInput([ember.ones(3, 4), ember.ones(3)]), RuntimeError,
                     "same number of dimensions")
    yield ErrorInput(SampleInput([ember.ones(())]), RuntimeError, "zero-dimensional")
    yield ErrorInput(SampleInput([]), ValueError, "non-empty")
    yield ErrorInput(SampleInput([ember.ones(3)], 1), IndexError, "out of range")
    yield ErrorInput(SampleInput(ember.ones(3)), TypeError, "tuple of Tensors")


def _errors_stack(rng):
    import ember

    yield ErrorInput(SampleInput([ember.ones(3, 4), ember.ones(4, 3)]), RuntimeError,
                     "equal size")
    yield ErrorInput(SampleInput([]), RuntimeError, "non-empty")


def _errors_repeat_interleave(rng):
    import ember

    x = ember.ones(3, 4)
    yield ErrorInput(SampleInput(x, -1), RuntimeError, "non-negative")
    yield ErrorInput(SampleInput(x, ember.tensor([1, 2]), dim=0), RuntimeError, "same size")
    yield ErrorInput(SampleInput(x, ember.tensor([1, -1, 1]), dim=0), RuntimeError, "negative")
    yield ErrorInput(SampleInput(x, 2, dim=1, output_size=9), RuntimeError, "output_size")


# ------------------------------------------------------------------------------------------------
# the table

op_db = [
    # -- reshaping views --------------------------------------------------------------------------
    OpInfo("view", op=_meth("view"), torch_op=_torch_meth("view"), dtypes=ALL, is_view=True,
           ref=lambda a, *s: a.reshape(*s),
           sample_inputs=_samples(((2, 3, 4), (6, 4), {}), ((2, 3, 4), (-1,), {}),
                                  ((2, 3, 4), ((4, 6),), {}), ((), (1, 1), {}),
                                  ((0, 3), (3, 0), {}), ((2, 3), (3, -1), {})),
           error_inputs=_errors_view, skips={"noncontiguous": NONCONTIG_VIEW}),
    OpInfo("view", variant="dtype", op=_meth("view"), torch_op=_torch_meth("view"),
           dtypes=NO_BF16, is_view=True, ref=_ref_view_dtype, sample_inputs=_sample_view_dtype,
           differentiable=False, skips={"noncontiguous": NONCONTIG_VIEW}),
    OpInfo("view_as", op=_meth("view_as"), torch_op=_torch_meth("view_as"), dtypes=ALL,
           is_view=True, ref=lambda a, b: a.reshape(b.shape),
           sample_inputs=_sample_binary_shape([((2, 6), (3, 4)), ((), (1,))]),
           skips={"noncontiguous": NONCONTIG_VIEW}),
    OpInfo("reshape", dtypes=ALL, ref=lambda a, s: a.reshape(s),
           sample_inputs=_samples(((2, 3, 4), ((6, 4),), {}), ((2, 3, 4), ((-1,),), {}),
                                  ((2, 3, 4), ((4, -1),), {}), ((), ((1,),), {}),
                                  ((0, 3), ((3, 0),), {}))),
    OpInfo("reshape_as", op=_meth("reshape_as"), torch_op=_torch_meth("reshape_as"),
           dtypes=ALL, ref=lambda a, b: a.reshape(b.shape),
           sample_inputs=_sample_binary_shape([((2, 6), (3, 4)), ((3, 4), (12,))])),
    OpInfo("flatten", dtypes=ALL, ref=_ref_flatten,
           sample_inputs=_samples(((2, 3, 4), (), {}), ((2, 3, 4), (1,), {}),
                                  ((2, 3, 4), (0, 1), {}), ((2, 3, 4), (), dict(start_dim=-2)),
                                  ((), (), {}), ((0, 3), (), {})),
           error_inputs=_errors(((2, 3), (1, 0), RuntimeError, "start_dim cannot come after"),
                                ((2, 3), (2,), IndexError, "out of range"))),
    OpInfo("unflatten", dtypes=ALL, ref=_ref_unflatten,
           sample_inputs=_samples(((2, 12), (1, (3, 4)), {}), ((2, 12), (-1, (-1, 2)), {}),
                                  ((6,), (0, (2, 1, 3)), {})),
           error_inputs=_errors(((3, 4), (1, (3, 2)), RuntimeError, "multiply up"),
                                ((3, 4), (1, ()), RuntimeError, "non-empty"))),
    OpInfo("ravel", dtypes=ALL, ref=np.ravel,
           sample_inputs=_samples(((2, 3), (), {}), ((), (), {}), ((0, 2), (), {}))),
    OpInfo("squeeze", dtypes=ALL, is_view=True, ref=_ref_squeeze,
           sample_inputs=_samples(((1, 3, 1), (), {}), ((1, 3, 1), (0,), {}),
                                  ((1, 3, 1), (1,), {}), ((1, 3, 1), ((0, -1),), {}),
                                  ((), (), {}), ((), (0,), {}), ((1, 0), (), {})),
           error_inputs=_errors(((3, 4), (5,), IndexError, "out of range")), inplace=True),
    OpInfo("unsqueeze", dtypes=ALL, is_view=True, ref=np.expand_dims,
           sample_inputs=_samples(((3, 4), (0,), {}), ((3, 4), (1,), {}), ((3, 4), (2,), {}),
                                  ((3, 4), (-1,), {}), ((), (0,), {}), ((0,), (0,), {})),
           error_inputs=_errors(((3, 4), (3,), IndexError, "out of range")), inplace=True),
    # -- permuting views ------------------------------------------------------------------------
    OpInfo("permute", dtypes=ALL, is_view=True, ref=np.transpose,
           sample_inputs=_samples(((2, 3, 4), ((2, 0, 1),), {}), ((2, 3, 4), ((-1, 0, 1),), {}),
                                  ((), ((),), {}), ((3, 0), ((1, 0),), {})),
           error_inputs=_errors(((3, 4), ((0,),), RuntimeError, "does not match"),
                                ((3, 4), ((0, 0),), RuntimeError, "duplicate"))),
    OpInfo("transpose", dtypes=ALL, is_view=True, ref=_ref_swapaxes,
           sample_inputs=_samples(((2, 3, 4), (0, 2), {}), ((2, 3, 4), (-1, 0), {}),
                                  ((), (0, -1), {})),
           error_inputs=_errors(((3,), (0, 2), IndexError, "out of range")), inplace=True),
    OpInfo("swapaxes", dtypes=ALL, is_view=True, ref=np.swapaxes,
           sample_inputs=_samples(((2, 3, 4), (0, 2), {})), inplace=True),
    OpInfo("swapdims", dtypes=ALL, is_view=True, ref=np.swapaxes,
           sample_inputs=_samples(((2, 3, 4), (1, 2), {})), inplace=True),
    OpInfo("t", dtypes=ALL, is_view=True, ref=lambda a: a.T,
           sample_inputs=_samples(((3, 4), (), {}), ((3,), (), {}), ((), (), {})),
           error_inputs=_errors(((2, 3, 4), (), RuntimeError, "<= 2 dimensions")), inplace=True),
    OpInfo("movedim", dtypes=ALL, is_view=True, ref=np.moveaxis,
           sample_inputs=_samples(((2, 3, 4), (0, 2), {}), ((2, 3, 4), ((0, 1), (2, 0)), {}),
                                  ((2, 3, 4), (-1, 0), {})),
           error_inputs=_errors(((3, 4), ((0, 1), (0,)), RuntimeError, "same number of dims"),
                                ((3, 4), ((0, 0), (0, 1)), RuntimeError, "repeated dim"))),
    OpInfo("moveaxis", dtypes=ALL, is_view=True, ref=np.moveaxis,
           sample_inputs=_samples(((2, 3, 4), (0, -1), {}))),
    OpInfo("T", op=_prop("T"), torch_op=_torch_prop("T"), method=False, dtypes=ALL,
           is_view=True, ref=lambda a: a.T,
           sample_inputs=_samples(((3, 4), (), {}), ((), (), {}))),
    OpInfo("mT", op=_prop("mT"), torch_op=_torch_prop("mT"), method=False, dtypes=ALL,
           is_view=True, ref=_ref_mT,
           sample_inputs=_samples(((3, 4), (), {}), ((2, 3, 4), (), {})),
           error_inputs=lambda rng: [ErrorInput(SampleInput(_t((3,), _dt.float32, rng)),
                                                RuntimeError, "matrices")]),
    OpInfo("H", op=_prop("H"), torch_op=_torch_resolved(_prop("H")), method=False, dtypes=ALL,
           ref=_ref_H, sample_inputs=_samples(((3, 4), (), {}), ((), (), {})),
           error_inputs=lambda rng: [ErrorInput(SampleInput(_t((2, 3, 4), _dt.float32, rng)),
                                                RuntimeError, "mH")]),
    OpInfo("mH", op=_prop("mH"), torch_op=_torch_resolved(_prop("mH")), method=False, dtypes=ALL,
           ref=_ref_mH, sample_inputs=_samples(((3, 4), (), {}), ((2, 3, 4), (), {}))),
    OpInfo("adjoint", dtypes=ALL, ref=_ref_mH, torch_op=_torch_resolved(_meth("adjoint")),
           sample_inputs=_samples(((3, 4), (), {}), ((2, 3, 4), (), {}))),
    # -- broadcasting views ---------------------------------------------------------------------
    OpInfo("expand", op=_meth("expand"), torch_op=_torch_meth("expand"), dtypes=ALL,
           is_view=True, ref=_ref_expand,
           sample_inputs=_samples(((3, 1), (2, 3, 4), {}), ((3,), ((2, 3),), {}),
                                  ((), (2,), {}), ((3, 1), (-1, 5), {}), ((3, 1), (3, 1), {}),
                                  ((3, 1), (0, 3, 1), {})),
           error_inputs=_errors(((3, 4), (2, 3), RuntimeError, "must match the existing size"),
                                ((3, 4), (3,), RuntimeError, "number of sizes"),
                                ((3, 4), (-1, -1, 4), RuntimeError, "leading, non-existing"))),
    OpInfo("expand_as", op=_meth("expand_as"), torch_op=_torch_meth("expand_as"), dtypes=ALL,
           is_view=True, ref=lambda a, b: np.broadcast_to(a, b.shape),
           sample_inputs=_sample_binary_shape([((3, 1), (2, 3, 4)), ((), (2,))])),
    OpInfo("broadcast_to", dtypes=ALL, is_view=True, method=False, ref=np.broadcast_to,
           sample_inputs=_samples(((3, 1), ((2, 3, 4),), {}), ((), ((2,),), {}))),
    OpInfo("broadcast_tensors", dtypes=ALL, method=False, ref=np.broadcast_arrays,
           sample_inputs=_sample_broadcast_tensors),
    # -- slicing views --------------------------------------------------------------------------
    OpInfo("narrow", dtypes=ALL, is_view=True, ref=_ref_narrow,
           sample_inputs=_samples(((3, 4), (0, 1, 2), {}), ((3, 4), (1, -2, 2), {}),
                                  ((3, 4), (-1, 0, 0), {}), ((3, 4), (0, 3, 0), {})),
           error_inputs=_errors(((3, 4), (0, 2, 2), RuntimeError, "exceeds dimension size"),
                                ((3, 4), (0, 4, 0), IndexError, "start out of range"),
                                ((3, 4), (0, 1, -1), RuntimeError, "non-negative"),
                                ((), (0, 0, 1), RuntimeError, "0-dim"))),
    OpInfo("narrow_copy", dtypes=ALL, ref=_ref_narrow, supports_out=True,
           sample_inputs=_samples(((3, 4), (1, 1, 2), {}), ((3, 4), (0, -1, 1), {})),
           skips={"torch_gradients": "PyTorch 2.13's narrow_copy gives a zero gradient for a "
                                     "negative start (gradcheck verifies ember's)"}),
    OpInfo("select", dtypes=ALL, is_view=True, ref=lambda a, d, i: np.take(a, i, axis=d),
           sample_inputs=_samples(((3, 4), (0, 1), {}), ((3, 4), (1, -1), {}),
                                  ((3,), (0, 2), {}), ((2, 0), (0, 1), {})),
           error_inputs=_errors(((3, 4), (0, 3), IndexError, "out of range"),
                                ((), (0, 0), IndexError, "0-dim"))),
    OpInfo("diagonal", dtypes=ALL, is_view=True, ref=np.diagonal,
           sample_inputs=_samples(((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {}),
                                  ((2, 3, 4), (0, 2, 0), {}), ((3, 4), (5,), {}),
                                  ((2, 3, 4), (1, -1, -2), {})),
           error_inputs=_errors(((3, 4), (0, 1, 1), RuntimeError, "cannot be identical"),
                                ((3,), (), IndexError, "out of range"))),
    OpInfo("unfold", op=_meth("unfold"), torch_op=_torch_meth("unfold"), dtypes=ALL,
           is_view=True, ref=_ref_unfold,
           sample_inputs=_samples(((3, 7), (1, 3, 2), {}), ((5,), (0, 2, 1), {}),
                                  ((4, 3), (0, 4, 1), {}), ((), (0, 1, 1), {}),
                                  ((2, 6), (-1, 2, 3), {})),
           error_inputs=_errors(((3, 4), (1, 5, 1), RuntimeError, "maximum size"),
                                ((3, 4), (1, 2, 0), RuntimeError, "step"))),
    OpInfo("as_strided", dtypes=ALL, is_view=True, ref=_ref_as_strided,
           sample_inputs=_sample_as_strided,
           skips={"noncontiguous": "as_strided reads the storage, which differs by layout"},
           error_inputs=_errors(((3, 4), ((4, 4), (4, 1)), RuntimeError, "out of bounds"),
                                ((3, 4), ((2,), (-1,)), RuntimeError, "Negative strides")),
           inplace=True),
    OpInfo("view_as_real", dtypes=COMPLEX, is_view=True, method=False, ref=_ref_view_as_real,
           sample_inputs=_samples(((3, 2), (), {}), ((), (), {}), ((0, 2), (), {})),
           error_inputs=_errors(((3,), (), RuntimeError, "complex"))),
    OpInfo("view_as_complex", dtypes=(_dt.float32, _dt.float64), is_view=True, method=False,
           ref=_ref_view_as_complex, sample_inputs=_sample_view_as_complex,
           error_inputs=_errors_view_as_complex,
           skips={"noncontiguous": "needs a last dim of stride 1 (torch raises too)"}),
    # -- splitting (multi-output views) ---------------------------------------------------------
    OpInfo("unbind", dtypes=ALL, is_view=True, ref=lambda a, dim=0: tuple(np.moveaxis(a, dim, 0)),
           sample_inputs=_samples(((3, 4), (), {}), ((3, 4), (1,), {}), ((2, 3, 4), (-1,), {})),
           error_inputs=_errors(((), (), IndexError, "no dimensions"))),
    OpInfo("split", dtypes=ALL, is_view=True, ref=_ref_split,
           sample_inputs=_samples(((5, 4), (2,), {}), ((5, 4), ([1, 4],), {}),
                                  ((5, 4), ([1, 3], 1), {}), ((0,), (0,), {})),
           error_inputs=_errors(((3,), ([1, 1],), RuntimeError, "sum exactly"),
                                ((3,), (-1,), RuntimeError, "non-negative"),
                                ((3,), (0,), RuntimeError, "can only be 0"))),
    OpInfo("split_with_sizes", dtypes=ALL, is_view=True,
           ref=lambda a, s, dim=0: _ref_split(a, s, dim),
           sample_inputs=_samples(((5, 4), ([2, 3],), {}), ((5, 4), ([0, 4], 1), {}))),
    OpInfo("chunk", dtypes=ALL, is_view=True, ref=_ref_chunk,
           sample_inputs=_samples(((5, 4), (3,), {}), ((6, 4), (4,), {}), ((5, 4), (2, 1), {})),
           error_inputs=_errors(((3,), (0,), RuntimeError, "greater than 0"))),
    OpInfo("tensor_split", dtypes=ALL, is_view=True,
           ref=lambda a, i, dim=0: tuple(np.array_split(a, i, axis=dim)),
           sample_inputs=_sample_tensor_split,
           error_inputs=_errors(((3,), (0,), RuntimeError, "larger than 0"))),
    OpInfo("hsplit", dtypes=ALL, is_view=True, ref=np.hsplit,
           sample_inputs=_samples(((4, 6), (3,), {}), ((6,), ([1, 4],), {})),
           error_inputs=_errors(((3, 4), (3,), RuntimeError, "not divisible"),
                                ((), (1,), RuntimeError, "at least 1 dimension"))),
    OpInfo("vsplit", dtypes=ALL, is_view=True, ref=np.vsplit,
           sample_inputs=_samples(((4, 6), (2,), {}), ((4, 6), ([1],), {})),
           error_inputs=_errors(((3,), (3,), RuntimeError, "at least 2 dimension"))),
    OpInfo("dsplit", dtypes=ALL, is_view=True, ref=np.dsplit,
           sample_inputs=_samples(((2, 3, 4), (2,), {}), ((2, 3, 4), ([3],), {}))),
    # -- joining --------------------------------------------------------------------------------
    OpInfo("cat", dtypes=ALL, method=False, supports_out=True, ref=_ref_cat,
           sample_inputs=_sample_cat, error_inputs=_errors_cat),
    OpInfo("cat", variant="promote", dtypes=ALL, method=False, ref=_ref_cat,
           sample_inputs=_sample_cat_promote, differentiable=False, supports_out=True),
    OpInfo("concat", dtypes=ALL, method=False, ref=_ref_cat,
           sample_inputs=_list_samples(([(2, 3), (2, 1)], (1,), {})), supports_out=True),
    OpInfo("concatenate", dtypes=ALL, method=False, ref=_ref_cat,
           sample_inputs=_list_samples(([(2, 3), (1, 3)], (), {}),
                                       ([(2, 3), (2, 1)], (), dict(axis=1))), supports_out=True),
    OpInfo("stack", dtypes=ALL, method=False, supports_out=True,
           ref=lambda ts, dim=0: np.stack(ts, dim),
           sample_inputs=_list_samples(([(2, 3), (2, 3)], (), {}), ([(2, 3)] * 3, (1,), {}),
                                       ([(2, 3), (2, 3)], (-1,), {}), ([(), ()], (), {})),
           error_inputs=_errors_stack),
    OpInfo("hstack", dtypes=ALL, method=False, supports_out=True, ref=np.hstack,
           sample_inputs=_list_samples(([(2, 3), (2, 1)], (), {}), ([(3,), (2,)], (), {}),
                                       ([(), (2,)], (), {}))),
    OpInfo("vstack", dtypes=ALL, method=False, supports_out=True, ref=np.vstack,
           sample_inputs=_list_samples(([(2, 3), (1, 3)], (), {}), ([(3,), (3,)], (), {}),
                                       ([(), (1,)], (), {}))),
    OpInfo("row_stack", dtypes=ALL, method=False, ref=np.vstack,
           sample_inputs=_list_samples(([(3,), (3,)], (), {})), supports_out=True),
    OpInfo("dstack", dtypes=ALL, method=False, supports_out=True, ref=np.dstack,
           sample_inputs=_list_samples(([(2, 3), (2, 3)], (), {}), ([(3,), (3,)], (), {}),
                                       ([(1, 2, 1), (1, 2, 3)], (), {}))),
    OpInfo("column_stack", dtypes=ALL, method=False, supports_out=True, ref=np.column_stack,
           sample_inputs=_list_samples(([(3,), (3, 2)], (), {}), ([(), (1, 2)], (), {}))),
    OpInfo("atleast_1d", dtypes=ALL, method=False, ref=np.atleast_1d,
           sample_inputs=_samples(((), (), {}), ((3,), (), {}), ((2, 3), (), {}))),
    OpInfo("atleast_2d", dtypes=ALL, method=False, ref=np.atleast_2d,
           sample_inputs=_samples(((), (), {}), ((3,), (), {}), ((2, 3, 4), (), {}))),
    OpInfo("atleast_3d", dtypes=ALL, method=False, ref=np.atleast_3d,
           sample_inputs=_samples(((), (), {}), ((3,), (), {}), ((2, 3), (), {}),
                                  ((2, 3, 4), (), {}))),
    OpInfo("atleast_1d", variant="many", dtypes=ALL, method=False,
           ref=lambda *a: tuple(np.atleast_1d(x) for x in a),
           sample_inputs=_sample_binary_shape([((), (3,)), ((2, 3), ())])),
    # -- tiling ---------------------------------------------------------------------------------
    OpInfo("repeat", op=_meth("repeat"), torch_op=_torch_meth("repeat"), dtypes=ALL,
           ref=_ref_repeat,
           sample_inputs=_samples(((2, 3), (2, 1), {}), ((3,), (2, 2, 1), {}), ((), (3,), {}),
                                  ((2, 3), ((0, 2),), {}), ((2, 3), ((1, 1),), {})),
           error_inputs=_errors(((3, 4), (2,), RuntimeError, "can not be smaller"),
                                ((3, 4), (-1, 2), RuntimeError, "negative dimension"))),
    OpInfo("tile", dtypes=ALL, ref=np.tile,
           sample_inputs=_samples(((2, 3), ((2,),), {}), ((3,), ((2, 2, 1),), {}),
                                  ((2, 3), ((),), {}))),
    OpInfo("repeat_interleave", dtypes=ALL, ref=_ref_repeat_interleave,
           sample_inputs=_sample_repeat_interleave, error_inputs=_errors_repeat_interleave),
    # -- reordering copies ----------------------------------------------------------------------
    OpInfo("flip", dtypes=ALL, ref=_ref_flip,
           sample_inputs=_samples(((3, 4), ((0,),), {}), ((3, 4), ((0, 1),), {}),
                                  ((2, 3, 4), ((-1, 0),), {}), ((), ((0,),), {}),
                                  ((3, 4), ((),), {})),
           error_inputs=_errors(((3, 4), ((0, 0),), RuntimeError, "multiple times"))),
    OpInfo("fliplr", dtypes=ALL, ref=np.fliplr, sample_inputs=_samples(((3, 4), (), {}))),
    OpInfo("flipud", dtypes=ALL, ref=np.flipud,
           sample_inputs=_samples(((3, 4), (), {}), ((3,), (), {}))),
    OpInfo("roll", dtypes=ALL, ref=np.roll,
           sample_inputs=_samples(((3, 4), (1,), {}), ((3, 4), (-5,), {}),
                                  ((3, 4), ((1, 2), (0, 1)), {}), ((3, 4), (2, -1), {}),
                                  ((), (1,), {}), ((0, 4), (1,), {})),
           error_inputs=_errors(((3, 4), ((1, 2), (0,)), RuntimeError, "must align"))),
    OpInfo("rot90", dtypes=ALL, ref=np.rot90,
           sample_inputs=_samples(((2, 3), (), {}), ((2, 3), (2,), {}), ((2, 3), (3,), {}),
                                  ((2, 3), (-1,), {}), ((2, 3), (0,), {}),
                                  ((2, 3, 4), (1, (2, 0)), {})),
           error_inputs=_errors(((3, 4), (1, (0, 0)), RuntimeError, "to be different"),
                                ((3, 4), (1, (0,)), RuntimeError, "== 2"),
                                ((3,), (1,), RuntimeError, ">= 2"))),
    # -- triangles and diagonals ----------------------------------------------------------------
    OpInfo("tril", dtypes=ALL, inplace=True, supports_out=True,
           ref=lambda a, diagonal=0: np.tril(a, diagonal),
           sample_inputs=_samples(((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {}),
                                  ((2, 3, 4), (), dict(diagonal=2)), ((0, 3), (), {})),
           error_inputs=_errors(((3,), (), RuntimeError, "at least 2 dimensions"))),
    OpInfo("triu", dtypes=ALL, inplace=True, supports_out=True,
           ref=lambda a, diagonal=0: np.triu(a, diagonal),
           sample_inputs=_samples(((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {}),
                                  ((2, 3, 4), (), dict(diagonal=-2))),
           error_inputs=_errors(((3,), (), RuntimeError, "at least 2 dimensions"))),
    OpInfo("diag", dtypes=ALL, supports_out=True, ref=np.diag,
           sample_inputs=_samples(((3,), (), {}), ((3,), (1,), {}), ((3,), (-2,), {}),
                                  ((3, 4), (), {}), ((3, 4), (1,), {}), ((3, 4), (-1,), {})),
           error_inputs=_errors(((2, 2, 2), (), RuntimeError, "1D or 2D"),
                                ((), (), RuntimeError, "1D or 2D"))),
    OpInfo("diag_embed", dtypes=ALL, ref=_ref_diag_embed,
           sample_inputs=_samples(((3,), (), {}), ((2, 3), (), {}), ((2, 3), (1,), {}),
                                  ((2, 3), (-1, 0, 2), {})),
           error_inputs=_errors(((2,), (0, 0, 0), RuntimeError, "cannot be identical"))),
    OpInfo("diagflat", dtypes=ALL, ref=np.diagflat,
           sample_inputs=_samples(((3,), (), {}), ((2, 2), (-1,), {}), ((2, 2), (1,), {}))),
]

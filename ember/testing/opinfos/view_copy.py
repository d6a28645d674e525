"""OpInfo entries for ember/_ops/view_copy.py: the view scatters and the ``*_copy`` views."""

import numpy as np

from .._opinfo import ALL, COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput
from ..._core import dtype as _dt


def _t(shape, dtype, rng):
    from .. import make_tensor

    return make_tensor(shape, dtype=dtype, rng=rng)


def _scatter_samples(*specs):
    """``(input shape, src shape, args, kwargs)`` -> samples ``op(input, src, *args)``."""

    def gen(dtype, rng):
        for shape, src_shape, args, kwargs in specs:
            yield SampleInput(_t(shape, dtype, rng), _t(src_shape, dtype, rng), *args,
                              name=f"{shape}<-{src_shape}{args}{kwargs or ''}", **kwargs)

    return gen


def _scatter_errors(*specs):
    def gen(rng):
        for shape, src_shape, args, err, match in specs:
            yield ErrorInput(SampleInput(_t(shape, _dt.float32, rng),
                                         _t(src_shape, _dt.float32, rng), *args), err, match)

    return gen


def _samples(*specs):
    def gen(dtype, rng):
        for shape, args, kwargs in specs:
            yield SampleInput(_t(shape, dtype, rng), *args, name=f"{shape}{args}{kwargs or ''}",
                              **kwargs)

    return gen


# -- NumPy references ----------------------------------------------------------------------------


def _ref_select_scatter(a, src, dim, index):
    out = a.copy()
    out[(slice(None),) * (dim % a.ndim) + (index,)] = src
    return out


def _ref_slice_scatter(a, src, dim=0, start=None, end=None, step=1):
    out = a.copy()
    out[(slice(None),) * (dim % a.ndim) + (slice(start, end, step),)] = src
    return out


def _ref_diagonal_scatter(a, src, offset=0, dim1=0, dim2=1):
    out = a.copy()
    view = np.diagonal(out, offset, dim1, dim2)
    view.setflags(write=True)
    view[...] = src
    return out


def _ref_as_strided_scatter(a, src, size, stride, storage_offset=0):
    out = np.ascontiguousarray(a).copy()
    flat = out.reshape(-1)
    n = flat.itemsize
    view = np.lib.stride_tricks.as_strided(flat[storage_offset:], size, [s * n for s in stride])
    view[...] = src
    return out


def _copy(fn):
    return lambda a, *args, **kwargs: np.ascontiguousarray(fn(a, *args, **kwargs))


#: the ops PyTorch gives no complex derivative: gradients are checked in float64 only
_REAL_GRAD = (_dt.float64,)

op_db = [
    OpInfo("select_scatter", dtypes=ALL, ref=_ref_select_scatter, grad_dtypes=_REAL_GRAD,
           sample_inputs=_scatter_samples(((3, 4), (4,), (0, 1), {}),
                                          ((3, 4), (3,), (1, -1), {}),
                                          ((3,), (), (0, 2), {}),
                                          ((2, 3, 4), (2, 4), (1, 0), {})),
           error_inputs=_scatter_errors(((3, 4), (3,), (0, 1), RuntimeError, "size equal"),
                                        ((3, 4), (4,), (0, 3), IndexError, "out of range"),
                                        ((3, 4), (4,), (2, 0), IndexError, "range"))),
    OpInfo("slice_scatter", dtypes=ALL, ref=_ref_slice_scatter, grad_dtypes=_REAL_GRAD,
           sample_inputs=_scatter_samples(((6, 4), (2, 4), (), dict(start=4)),
                                          ((4, 6), (4, 2), (1, 1, 5, 2), {}),
                                          ((5,), (5,), (), {}),
                                          ((5,), (2,), (0, -2), {}),
                                          ((4, 3), (0, 3), (0, 5), {})),
           error_inputs=_scatter_errors(((4,), (3,), (0, 2), RuntimeError, "size equal"),
                                        ((4,), (2,), (0, 0, 2, 0), RuntimeError, "positive"))),
    OpInfo("diagonal_scatter", dtypes=ALL, ref=_ref_diagonal_scatter,
           sample_inputs=_scatter_samples(((3, 3), (3,), (), {}), ((3, 4), (3,), (1,), {}),
                                          ((3, 4), (2,), (-1,), {}),
                                          ((2, 3, 4), (3, 2), (0, 0, 2), {})),
           error_inputs=_scatter_errors(((3, 3), (2,), (), RuntimeError, "size equal"),
                                        ((3, 3), (3,), (0, 1, 1), RuntimeError, "identical"))),
    OpInfo("as_strided_scatter", dtypes=ALL, ref=_ref_as_strided_scatter,
           sample_inputs=_scatter_samples(((3, 3), (2,), ((2,), (2,)), {}),
                                          ((3, 4), (2, 2), ((2, 2), (4, 1), 1), {}),
                                          ((6,), (2, 2), ((2, 2), (1, 3)), {})),
           skips={"noncontiguous": "positions are storage positions of the input's layout; "
                                   "tested against torch in tests/_ops/test_view_copy.py",
                  "torch_gradients": "PyTorch 2.13's gradient for input is wrong (its own "
                                     "gradcheck fails); gradcheck verifies ember's"},
           error_inputs=_scatter_errors(
               ((3, 3), (3,), ((2,), (2,)), RuntimeError, "size equal"),
               ((3, 3), (2,), ((2,), (2,), 100), RuntimeError, "out of bounds"),
               ((3, 3), (2,), ((2,), (2, 1)), RuntimeError, "mismatch"))),
    # -- *_copy -------------------------------------------------------------------------------
    OpInfo("alias_copy", dtypes=ALL, method=False, ref=np.copy,
           sample_inputs=_samples(((3, 4), (), {}), ((), (), {}))),
    OpInfo("detach_copy", dtypes=ALL, method=False, ref=np.copy, differentiable=False,
           sample_inputs=_samples(((3, 4), (), {}))),
    OpInfo("diagonal_copy", dtypes=ALL, method=False, ref=_copy(np.diagonal),
           sample_inputs=_samples(((3, 4), (), {}), ((3, 4), (1,), {}),
                                  ((2, 3, 4), (0, 2, 0), {}))),
    OpInfo("expand_copy", dtypes=ALL, method=False,
           ref=lambda a, size: np.broadcast_to(a, size).copy(),
           sample_inputs=_samples(((3, 1), ((3, 4),), {}), ((), ((2,),), {}))),
    OpInfo("permute_copy", dtypes=ALL, method=False, ref=_copy(np.transpose),
           sample_inputs=_samples(((2, 3, 4), ((2, 0, 1),), {}))),
    OpInfo("select_copy", dtypes=ALL, method=False, ref=lambda a, d, i: np.take(a, i, axis=d),
           grad_dtypes=_REAL_GRAD,
           sample_inputs=_samples(((3, 4), (0, 1), {}), ((3, 4), (1, -1), {}))),
    OpInfo("slice_copy", dtypes=ALL, method=False, grad_dtypes=_REAL_GRAD,
           ref=lambda a, dim=0, start=None, end=None, step=1: a[
               (slice(None),) * (dim % a.ndim) + (slice(start, end, step),)].copy(),
           sample_inputs=_samples(((4, 6), (1, 1, 5, 2), {}), ((5,), (), {}),
                                  ((5,), (0, -3), {}))),
    OpInfo("squeeze_copy", dtypes=ALL, method=False,
           ref=lambda a, dim=None: np.squeeze(a, dim),
           sample_inputs=_samples(((1, 3, 1), (), {}), ((1, 3, 1), (0,), {}))),
    OpInfo("t_copy", dtypes=ALL, method=False, ref=lambda a: a.T.copy(),
           sample_inputs=_samples(((3, 4), (), {}), ((3,), (), {}))),
    OpInfo("transpose_copy", dtypes=ALL, method=False, ref=lambda a, d0, d1: np.swapaxes(
        a, d0, d1).copy(), sample_inputs=_samples(((2, 3, 4), (0, 2), {}))),
    OpInfo("unfold_copy", dtypes=ALL, method=False,
           ref=lambda a, d, size, step: np.lib.stride_tricks.sliding_window_view(
               a, size, axis=d)[::step].copy(),
           sample_inputs=_samples(((7,), (0, 3, 2), {}))),
    OpInfo("unsqueeze_copy", dtypes=ALL, method=False, ref=np.expand_dims,
           sample_inputs=_samples(((3, 4), (1,), {}), ((), (0,), {}))),
    OpInfo("view_copy", dtypes=ALL, method=False, ref=lambda a, shape: a.reshape(shape),
           sample_inputs=_samples(((3, 4), ((2, 6),), {}), ((3, 4), ((-1,),), {}))),
    OpInfo("view_as_real_copy", dtypes=COMPLEX, method=False,
           ref=lambda a: np.stack([a.real, a.imag], -1),
           sample_inputs=_samples(((3, 2), (), {}))),
    OpInfo("view_as_complex_copy", dtypes=(_dt.float32, _dt.float64), method=False,
           ref=lambda a: a[..., 0] + 1j * a[..., 1], sample_inputs=_samples(((3, 2), (), {})),
           skips={"noncontiguous": "view_as_complex needs a last dim of stride 1 (torch "
                                   "raises too)",
                  "gradients": "no complex derivative: torch refuses to record it, as ember"}),
    OpInfo("as_strided_copy", dtypes=FLOATS, method=False,
           ref=lambda a, size, stride: np.lib.stride_tricks.as_strided(
               np.ascontiguousarray(a).reshape(-1), size,
               [s * a.itemsize for s in stride]).copy(),
           skips={"noncontiguous": "as_strided reads the storage, which differs by layout"},
           sample_inputs=_samples(((3, 4), ((2, 2), (4, 1)), {}))),
]

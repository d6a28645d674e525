"""OpInfo entries for ember.fft (ember/_ops/fft.py)."""

import numpy as np

from ..._core import dtype as _dt
from .._opinfo import COMPLEX, ErrorInput, OpInfo, SampleInput

REAL_IN = (_dt.int64, _dt.float32, _dt.float64)
ANY_IN = REAL_IN + COMPLEX


def _t(shape, dtype, rng):
    import ember

    a = rng.uniform(-2, 2, size=shape)
    if dtype.category == 3:
        a = a + 1j * rng.uniform(-2, 2, size=shape)
    if dtype.category == 1:
        a = np.round(a * 3)
    return ember.tensor(a.astype(dtype.np))


def _sample_1d(dtype, rng):
    yield SampleInput(_t((8,), dtype, rng), name="vector")
    yield SampleInput(_t((3, 5), dtype, rng), name="rows")
    yield SampleInput(_t((4, 6), dtype, rng), n=9, name="pad")
    yield SampleInput(_t((4, 6), dtype, rng), n=4, dim=0, name="crop_dim0")
    yield SampleInput(_t((2, 6), dtype, rng), norm="ortho", name="ortho")
    yield SampleInput(_t((2, 6), dtype, rng), norm="forward", name="forward")
    yield SampleInput(_t((0, 6), dtype, rng), name="empty_batch")


def _sample_c2r(dtype, rng):
    yield SampleInput(_t((5,), dtype, rng), name="vector")
    yield SampleInput(_t((3, 5), dtype, rng), n=7, name="odd_n")
    yield SampleInput(_t((3, 5), dtype, rng), n=4, name="crop")
    yield SampleInput(_t((4, 3), dtype, rng), n=10, dim=0, norm="ortho", name="pad_dim0")
    yield SampleInput(_t((2, 4), dtype, rng), norm="forward", name="forward")


def _sample_2d(dtype, rng):
    yield SampleInput(_t((4, 6), dtype, rng), name="matrix")
    yield SampleInput(_t((2, 3, 4), dtype, rng), s=(5, 3), name="s")
    yield SampleInput(_t((3, 4, 2), dtype, rng), dim=(0, 1), norm="ortho", name="dims")


def _sample_nd(dtype, rng):
    yield SampleInput(_t((3, 4, 2), dtype, rng), name="all_dims")
    yield SampleInput(_t((3, 4, 2), dtype, rng), s=(3, 5), name="s_last")
    yield SampleInput(_t((3, 4, 2), dtype, rng), dim=(0, 2), norm="forward", name="dims")
    yield SampleInput(_t((3, 4), dtype, rng), s=(2, 6), dim=(1, 0), name="s_and_dim")


def _sample_c2r_nd(dtype, rng):
    yield SampleInput(_t((3, 4), dtype, rng), name="default")
    yield SampleInput(_t((2, 3, 4), dtype, rng), s=(4, 5), name="s")
    yield SampleInput(_t((3, 4, 2), dtype, rng), dim=(0, 1), norm="ortho", name="dims")


def _sample_shift(dtype, rng):
    yield SampleInput(_t((5,), dtype, rng), name="odd")
    yield SampleInput(_t((4, 6), dtype, rng), name="all_dims")
    yield SampleInput(_t((4, 5), dtype, rng), dim=1, name="dim")
    yield SampleInput(_t((3, 4, 5), dtype, rng), dim=(0, 2), name="dims")


def _errors_fft(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(4), n=0), RuntimeError, "Invalid number")
    yield ErrorInput(SampleInput(ember.ones(4), norm="bad"), RuntimeError, "normalization")
    yield ErrorInput(SampleInput(ember.ones(4), dim=2), IndexError, "")
    yield ErrorInput(SampleInput(ember.ones(4), n=2.0), TypeError, "")
    yield ErrorInput(SampleInput(ember.ones(4, dtype=ember.float16)), RuntimeError, "")


def _errors_rfft(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(4, dtype=ember.complex64)), RuntimeError,
                     "real input")


def _errors_fftn(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(4, 4), s=(2,), dim=(0, 1)), RuntimeError,
                     "same length")


def _errors_fft2(rng):
    import ember

    yield ErrorInput(SampleInput(ember.ones(4)), IndexError, "")


def _torch_resolved(name):
    """torch.fft.<name> with conjugate views resolved (the test driver reads .numpy())."""

    def get(torch):
        f = getattr(torch.fft, name)
        return lambda *a, **k: f(*a, **k).resolve_conj()

    return get


def _np1(f):
    def ref(a, n=None, dim=-1, norm=None):
        return f(a, n=n, axis=dim, norm=norm)

    return ref


def _npn(f, two_d=False):
    def ref(a, s=None, dim=(-2, -1) if two_d else None, norm=None):
        if dim is None and s is not None:
            dim = tuple(range(a.ndim - len(s), a.ndim))
        return f(a, s=s, axes=dim, norm=norm)

    return ref


def _entry(name, ref, samples, dtypes, **kw):
    return OpInfo(f"fft.{name}", ref=ref, sample_inputs=samples, dtypes=dtypes, method=False,
                  supports_out=True, atol=1e-4, rtol=1e-4, torch_op=_torch_resolved(name), **kw)


op_db = [
    _entry("fft", _np1(np.fft.fft), _sample_1d, ANY_IN, error_inputs=_errors_fft),
    _entry("ifft", _np1(np.fft.ifft), _sample_1d, ANY_IN),
    _entry("rfft", _np1(np.fft.rfft), _sample_1d, REAL_IN, error_inputs=_errors_rfft),
    _entry("irfft", _np1(np.fft.irfft), _sample_c2r, ANY_IN),
    _entry("hfft", _np1(np.fft.hfft), _sample_c2r, ANY_IN),
    _entry("ihfft", _np1(np.fft.ihfft), _sample_1d, REAL_IN),
    _entry("fft2", _npn(np.fft.fft2, True), _sample_2d, ANY_IN, error_inputs=_errors_fft2),
    _entry("ifft2", _npn(np.fft.ifft2, True), _sample_2d, ANY_IN),
    _entry("rfft2", _npn(np.fft.rfft2, True), _sample_2d, REAL_IN),
    _entry("irfft2", _npn(np.fft.irfft2, True), _sample_c2r_nd, ANY_IN),
    _entry("fftn", _npn(np.fft.fftn), _sample_nd, ANY_IN, error_inputs=_errors_fftn),
    _entry("ifftn", _npn(np.fft.ifftn), _sample_nd, ANY_IN),
    _entry("rfftn", _npn(np.fft.rfftn), _sample_nd, REAL_IN),
    _entry("irfftn", _npn(np.fft.irfftn), _sample_c2r_nd, ANY_IN),
    _entry("hfft2", None, _sample_c2r_nd, ANY_IN),
    _entry("ihfft2", None, _sample_2d, REAL_IN),
    _entry("hfftn", None, _sample_c2r_nd, ANY_IN),
    _entry("ihfftn", None, _sample_nd, REAL_IN),
    OpInfo("fft.fftshift", ref=lambda a, dim=None: np.fft.fftshift(a, axes=dim),
           sample_inputs=_sample_shift, dtypes=ANY_IN, method=False),
    OpInfo("fft.ifftshift", ref=lambda a, dim=None: np.fft.ifftshift(a, axes=dim),
           sample_inputs=_sample_shift, dtypes=ANY_IN, method=False),
]

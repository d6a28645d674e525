"""``ember.fft``: discrete Fourier transforms, as ``torch.fft``. See ember/_ops/fft.py."""

from ._overrides import consult_in as _consult_in

from ._ops.fft import (  # noqa: F401
    __all__,
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)


# every public function here consults __torch_function__ first (NOTE [ __torch_function__ ])
_consult_in(globals())

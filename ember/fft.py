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
from ._core.tensor import Tensor  # noqa: F401  (torch.fft exposes the class too)

# the argument descriptions this namespace's docstrings share (torch.fft keeps two such
# dictionaries for its own docs)
common_args = {
    "input": "input (Tensor): the input tensor.",
    "generator": "generator (:class:`ember.Generator`, optional): the source of randomness",
    "out": "out (Tensor, optional): the output tensor.",
    "memory_format": "memory_format (:class:`ember.memory_format`, optional): the memory "
                     "layout of the returned tensor.",
    "norm": "norm (str, optional): the normalization mode: \"backward\" (default), "
            "\"forward\" or \"ortho\".",
}
factory_common_args = dict(
    common_args,
    dtype="dtype (:class:`ember.dtype`, optional): the dtype of the returned tensor.",
    layout="layout (:class:`ember.layout`, optional): the layout of the returned tensor.",
    device="device (:class:`ember.device`, optional): the device of the returned tensor.",
    requires_grad="requires_grad (bool, optional): whether autograd records operations on "
                  "the returned tensor.",
)


# every public function here consults __torch_function__ first (NOTE [ __torch_function__ ])
_consult_in(globals())

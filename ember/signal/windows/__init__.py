"""``torch.signal.windows``: window functions (Hann, Hamming, Kaiser, Gaussian, ...).

Each returns a 1-D tensor of ``M`` samples; see :mod:`ember.signal.windows.windows`.
"""

from .windows import (
    bartlett, blackman, cosine, exponential, gaussian, general_cosine, general_hamming,
    hamming, hann, kaiser, nuttall,
)

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
    "general_hamming", "hamming", "hann", "kaiser", "nuttall",
]

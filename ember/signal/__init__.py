"""``torch.signal``: signal-processing helpers; for now the window functions of
:mod:`ember.signal.windows`.

Example::

    >>> ember.signal.windows.hann(4, sym=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""

from . import windows

__all__ = ["windows"]

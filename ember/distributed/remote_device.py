"""``ember.distributed.remote_device``: where a remote object lives, as a worker and a
device ("trainer0/cpu", "rank:1/cuda:0", or a device alone).

Example::

    >>> from ember.distributed.remote_device import _remote_device
    >>> d = _remote_device("rank:1/cpu")
    >>> d.rank(), d.worker_name(), d.device()
    (1, None, device(type='cpu'))
"""

from __future__ import annotations

import re

_RANK = re.compile(r"rank:(\d+)\Z")


def _bad(text):
    return ValueError(f"Could not parse remote_device: {text}. The valid format is "
                      "'<workername>/<device>' or 'rank:<rank>/<device>' or '<device>'")


class _remote_device:
    """A worker (by name or ``rank:<rank>``) and a device on it, or a local device.

    Args:
        remote_device (str or ember.device): ``"<workername>/<device>"``,
            ``"rank:<rank>/<device>"``, ``"<workername>"`` or ``"rank:<rank>"`` (on its
            CPU), or a device.

    Raises:
        ValueError: the string is none of those forms.
        RuntimeError: the device part is not a device.
        TypeError: ``remote_device`` is neither a string nor a device.

    Example::

        >>> from ember.distributed.remote_device import _remote_device
        >>> _remote_device("trainer0/cpu")
        trainer0/cpu
        >>> _remote_device("trainer0").device()
        device(type='cpu')
    """

    def __init__(self, remote_device):
        from .. import device as Device

        self._worker_name = self._rank = None
        if isinstance(remote_device, Device):
            self._device = remote_device
            return
        if not isinstance(remote_device, str):
            raise TypeError(f"Invalid type for remote_device: {type(remote_device)}")
        parts = remote_device.split("/")
        if len(parts) == 2:
            self._set_worker(parts[0], remote_device)
            self._device = Device(parts[1])
        elif len(parts) == 1 and _RANK.match(remote_device):
            self._rank, self._device = int(_RANK.match(remote_device).group(1)), Device("cpu")
        elif len(parts) == 1:
            try:
                self._device = Device(remote_device)
            except RuntimeError:  # not a device: a worker's name, on its CPU
                self._set_worker(remote_device, remote_device)
                self._device = Device("cpu")
        else:
            raise _bad(remote_device)

    def _set_worker(self, part, text):
        match = _RANK.match(part)
        if match:
            self._rank = int(match.group(1))
        elif part and ":" not in part:
            self._worker_name = part
        else:
            raise _bad(text)

    def worker_name(self):
        """The worker's name, or None (given by rank, or a local device)."""
        return self._worker_name

    def rank(self):
        """The worker's rank, or None (given by name, or a local device)."""
        return self._rank

    def device(self):
        """The device on the worker."""
        return self._device

    def __repr__(self):
        if self._worker_name is not None:
            return f"{self._worker_name}/{self._device}"
        if self._rank is not None:
            return f"rank:{self._rank}/{self._device}"
        return str(self._device)

    def __eq__(self, other):
        return isinstance(other, _remote_device) and (
            self._worker_name, self._rank, self._device) == (
            other._worker_name, other._rank, other._device)

    def __hash__(self):
        return hash((self._worker_name, self._rank, self._device))

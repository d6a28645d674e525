"""``ember.utils.tensorboard``: logging to TensorBoard -- not available in ember yet.

The namespace imports (PyTorch's fails without the ``tensorboard`` package; ember's does
not, so scripts that import it at the top run), and constructing a ``SummaryWriter`` raises
NotImplementedError naming the feature: event-file writing comes with the profiler and
TensorBoard work, whether or not the ``tensorboard`` package is installed.

Example::

    >>> from ember.utils.tensorboard import SummaryWriter
    >>> SummaryWriter()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    NotImplementedError: ember.utils.tensorboard.SummaryWriter is not implemented yet ...
"""

from __future__ import annotations

__all__ = ["SummaryWriter"]


class SummaryWriter:
    """Writes scalars, images and graphs to TensorBoard event files: not implemented yet.

    Args:
        log_dir: where the event files go.
        comment, purge_step, max_queue, flush_secs, filename_suffix: as in PyTorch.

    Raises:
        NotImplementedError: always, naming the missing feature.

    Example::

        >>> ember.utils.tensorboard.SummaryWriter("runs/x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: ember.utils.tensorboard.SummaryWriter is not implemented yet ...
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        raise NotImplementedError(
            "ember.utils.tensorboard.SummaryWriter is not implemented yet (TensorBoard event "
            "files come with the profiler/TensorBoard work); log with print or a CSV file "
            "meanwhile")

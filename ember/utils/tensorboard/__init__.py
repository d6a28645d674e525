"""``ember.utils.tensorboard``: log a run for TensorBoard (``torch.utils.tensorboard``).

``SummaryWriter`` writes real TensorBoard event files -- scalars, histograms, images,
figures, text, hyperparameters, PR curves, embeddings, the model's op graph, video, audio
-- with the ``tensorboard`` package's own writer and protocol buffers (see NOTE
[ TensorBoard file format ] in writer.py). That package is an optional extra: without it,
importing this module raises ``ModuleNotFoundError`` naming what to install, as PyTorch's
does.

Example::

    >>> import tempfile
    >>> from ember.utils.tensorboard import SummaryWriter
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with SummaryWriter(d) as writer:
    ...         writer.add_scalar("loss", 0.5, global_step=0)
"""

try:
    import tensorboard as _tensorboard
except ImportError as e:  # ModuleNotFoundError included
    raise ModuleNotFoundError(
        "No module named 'tensorboard': ember.utils.tensorboard writes TensorBoard event files "
        "with it; install it with `pip install tensorboard` (or `pip install "
        "'ember[tensorboard]'`)", name="tensorboard") from e

from tensorboard.summary.writer.record_writer import RecordWriter

from .writer import FileWriter, SummaryWriter

del _tensorboard

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]

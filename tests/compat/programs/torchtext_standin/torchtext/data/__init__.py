"""``torchtext.data``: only ``utils`` (tokenizers)."""

from . import utils  # noqa: F401

"""``ChannelShuffle`` at PyTorch's module path (``torch.nn.modules.channelshuffle``)."""

from .sampling import ChannelShuffle  # noqa: F401

__all__ = ["ChannelShuffle"]

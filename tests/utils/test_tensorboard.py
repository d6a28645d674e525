"""ember.utils.tensorboard: importable; SummaryWriter names the missing feature."""

import pytest


def test_tensorboard_import_succeeds_and_writer_raises():
    from ember.utils.tensorboard import SummaryWriter

    with pytest.raises(NotImplementedError, match="TensorBoard"):
        SummaryWriter("runs/x")

"""The projector's files for ``SummaryWriter.add_embedding``.

The embedding projector reads plain files beside the event files, not events: for each
embedding a directory ``<step:05d>/<tag>`` with ``tensors.tsv`` (one row per point),
optionally ``metadata.tsv`` (labels) and ``sprite.png`` (thumbnails tiled in a square), and
one ``projector_config.pbtxt`` in the log directory listing them all.
"""

from __future__ import annotations

import io
import math
import os

import numpy as np

from ._convert import make_grid, make_np


def write_tsv(metadata, save_path, metadata_header=None) -> None:
    """``metadata.tsv``: one label per line, or a header line and tab-separated columns."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise ValueError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    with open(os.path.join(save_path, "metadata.tsv"), "wb") as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))


def write_sprite(label_img, save_path) -> None:
    """``sprite.png``: the images ``(N, C, H, W)`` (float in [0, 1]) tiled into a square."""
    from PIL import Image

    imgs = make_np(label_img)
    nrow = math.ceil(imgs.shape[0] ** 0.5)
    grid = make_grid(imgs, ncols=nrow).transpose(1, 2, 0)  # HWC
    side = grid.shape[1]
    square = np.zeros((side, side, 3))
    square[:grid.shape[0]] = grid
    buf = io.BytesIO()
    Image.fromarray(np.uint8((square * 255).clip(0, 255))).save(buf, format="PNG")
    with open(os.path.join(save_path, "sprite.png"), "wb") as f:
        f.write(buf.getvalue())


def write_matrix(mat: np.ndarray, save_path) -> None:
    """``tensors.tsv``: one tab-separated row per data point."""
    with open(os.path.join(save_path, "tensors.tsv"), "wb") as f:
        for row in mat:
            f.write(("\t".join(str(v) for v in row.tolist()) + "\n").encode("utf-8"))


def embedding_info(metadata, label_img, subdir, global_step, tag):
    """The projector config's entry for one embedding."""
    from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = f"{subdir}/tensors.tsv"
    if metadata is not None:
        info.metadata_path = f"{subdir}/metadata.tsv"
    if label_img is not None:
        info.sprite.image_path = f"{subdir}/sprite.png"
        info.sprite.single_image_dim.extend([label_img.shape[3], label_img.shape[2]])
    return info


def write_config(log_dir, config) -> None:
    """``projector_config.pbtxt`` in the log directory (rewritten whole at each call)."""
    from google.protobuf import text_format

    with open(os.path.join(log_dir, "projector_config.pbtxt"), "wb") as f:
        f.write(text_format.MessageToString(config).encode("utf-8"))

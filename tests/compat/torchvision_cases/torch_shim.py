"""Test-only: lets the real torch import the installed torchvision, whose native library was
built for another torch release (``operator torchvision::nms does not exist``).

It declares torchvision's operators with ``torch.library`` (the schemas ember declares,
``ember._vision_ops.SCHEMAS``) and gives them reference kernels written in torch, not ember's:
- ``nms``: the greedy definition, with torchvision's own ``box_iou``;
- ``roi_align``: torchvision's own pure-torch ``_roi_align`` (its compile path), and its
  backward operator from torch's autograd through that function;
- the others raise (the tests compare them with reference formulas instead).
``torch.ops.load_library`` then accepts torchvision's ``_C`` library without loading it, so
torchvision registers its autograd, fake and autocast kernels on top, as it would.
"""

import os
import sys

import torch
import torch.library

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
from ember._vision_ops import SCHEMAS  # noqa: E402  (plain data; ember's torch alias is not installed)

_lib = torch.library.Library("torchvision", "DEF")
for _schema in SCHEMAS:
    _lib.define(_schema)


def _nms(dets, scores, iou_threshold):
    from torchvision.ops.boxes import box_iou

    order = torch.sort(scores, descending=True, stable=True).indices
    removed = torch.zeros(len(order), dtype=torch.bool)
    keep = []
    for pos in range(len(order)):
        i = order[pos]
        if removed[i]:
            continue
        keep.append(int(i))
        rest = order[pos + 1:]
        iou = box_iou(dets[i][None], dets[rest])[0]
        removed[rest[iou.double() > iou_threshold]] = True
    return torch.tensor(keep, dtype=torch.int64)


def _roi_align(input, rois, spatial_scale, ph, pw, sampling_ratio, aligned):
    from torchvision.ops.roi_align import _roi_align

    reference = _roi_align.__wrapped__  # as written, not through torch.compile

    return reference(input, rois, spatial_scale, ph, pw, sampling_ratio, aligned)


def _roi_align_backward(grad, rois, spatial_scale, ph, pw, batch_size, channels, height,
                        width, sampling_ratio, aligned):
    from torchvision.ops.roi_align import _roi_align

    reference = _roi_align.__wrapped__  # as written, not through torch.compile

    # the output is linear in the input: its vector-Jacobian product at any input
    x = torch.zeros(batch_size, channels, height, width, dtype=grad.dtype)
    _, vjp = torch.func.vjp(
        lambda t: reference(t, rois, spatial_scale, ph, pw, sampling_ratio, aligned), x)
    return vjp(grad)[0]


def _missing(name):
    def kernel(*args):
        raise NotImplementedError(f"torch_shim: torchvision::{name} has no reference kernel")

    return kernel


_KERNELS = {"nms": _nms, "roi_align": _roi_align, "_roi_align_backward": _roi_align_backward,
            "_cuda_version": lambda: -1}
for _schema in SCHEMAS:
    _name = _schema.split("(", 1)[0]
    _lib.impl(_name, _KERNELS.get(_name, _missing(_name)), "CompositeExplicitAutograd")

_load_library = torch.ops.load_library


def _load(path):
    if os.path.basename(os.path.dirname(path)) == "torchvision" and \
            os.path.basename(path).startswith("_C"):
        return None  # its operators are the ones above
    return _load_library(path)


torch.ops.load_library = _load

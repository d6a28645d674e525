"""``ember.utils.tensorboard.summary``: ``Summary`` protocol buffers, one builder per kind.

Each builder turns values (ember tensors, NumPy arrays, numbers) into a TensorBoard
``Summary`` message laid out the way TensorBoard's plugins read it -- scalars as
``simple_value``, histograms as ``HistogramProto``, images as PNG, text/PR curves/hparams as
tensors with their plugin's metadata -- the same layout PyTorch's writer produces, so the
same TensorBoard views show them. ``SummaryWriter`` calls these; they are public for users
who write events themselves.

Example::

    >>> scalar("loss", 0.5).value[0].simple_value
    0.5
"""

from __future__ import annotations

import io
import json
import struct

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ._convert import convert_to_HWC, make_np, prepare_video

__all__ = ["half_to_int", "int_to_half", "hparams", "scalar", "histogram_raw", "histogram",
           "make_histogram", "image", "image_boxes", "draw_boxes", "make_image", "video",
           "make_video", "audio", "custom_scalars", "text", "tensor_proto", "pr_curve_raw",
           "pr_curve", "compute_curve", "mesh"]


def _shape(dims) -> TensorShapeProto:
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in dims])


def _plugin(name: str, content: bytes = b"") -> SummaryMetadata:
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=name,
                                                                  content=content))


def half_to_int(f: float) -> int:
    """The bits of float32 ``f`` as an int (how TensorProto's ``half_val`` stores halves).

    Args:
        f (float): the value.

    Returns:
        int: the bits.

    Example::

        >>> half_to_int(1.0)
        1065353216
    """
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i: int) -> float:
    """The float32 whose bits are ``i``: the inverse of ``half_to_int``.

    Args:
        i (int): the bits.

    Returns:
        float: the value.

    Example::

        >>> int_to_half(1065353216)
        1.0
    """
    return struct.unpack("f", struct.pack("i", i))[0]


# --------------------------------------------------------------------------------------------
# scalars, tensors, text


def scalar(name, tensor, collections=None, new_style=False, double_precision=False) -> Summary:
    """A scalar summary.

    Args:
        name: the tag.
        tensor: a number or a one-element tensor/array.
        collections: unused (kept for PyTorch's signature).
        new_style: store a tensor with the ``scalars`` plugin's metadata instead of the
            classic ``simple_value`` (TensorBoard loads it faster).
        double_precision: with ``new_style``, store a float64 tensor.

    Returns:
        Summary

    Example::

        >>> scalar("acc", ember.tensor(0.25)).value[0].simple_value
        0.25
    """
    arr = make_np(tensor).squeeze()
    if arr.ndim != 0:
        raise ValueError(f"Tensor should contain one element (0 dimensions). Was given size: "
                         f"{arr.size} and {arr.ndim} dimensions.")
    value = float(arr)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    if double_precision:
        proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=_plugin("scalars"))])


# dtype name -> (TensorProto dtype, value field)
_TENSOR_FIELDS = {
    "float16": ("DT_HALF", "half_val"), "bfloat16": ("DT_BFLOAT16", "half_val"),
    "float32": ("DT_FLOAT", "float_val"), "float64": ("DT_DOUBLE", "double_val"),
    "int8": ("DT_INT8", "int_val"), "int16": ("DT_INT16", "int_val"),
    "int32": ("DT_INT32", "int_val"), "int64": ("DT_INT64", "int64_val"),
    "uint8": ("DT_UINT8", "uint32_val"), "bool": ("DT_BOOL", "bool_val"),
    "complex64": ("DT_COMPLEX64", "scomplex_val"),
    "complex128": ("DT_COMPLEX128", "dcomplex_val"),
}


def tensor_proto(tag, tensor) -> Summary:
    """A summary holding a whole tensor (the ``tensor`` plugin), values flattened row-major.

    Args:
        tag: the tag.
        tensor: an ember tensor.

    Returns:
        Summary

    Raises:
        ValueError: for a dtype TensorBoard cannot store, or a tensor of 2 GB or more.

    Example::

        >>> tensor_proto("t", ember.tensor([1, 2])).value[0].tensor.int64_val
        [1, 2]
    """
    dtype_name = str(tensor.dtype).replace("ember.", "")
    if tensor.numel() * tensor.element_size() >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    if dtype_name not in _TENSOR_FIELDS:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dt, field = _TENSOR_FIELDS[dtype_name]
    arr = make_np(tensor).reshape(-1)
    if field == "half_val":
        values = [half_to_int(float(v)) for v in arr.astype(np.float32)]
    elif field in ("scomplex_val", "dcomplex_val"):
        values = np.stack([arr.real, arr.imag], axis=-1).reshape(-1).tolist()
    else:
        values = arr.tolist()
    proto = TensorProto(dtype=dt, tensor_shape=_shape(tensor.shape), **{field: values})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin("tensor"), tensor=proto)])


def text(tag, text) -> Summary:
    """A text summary (Markdown is rendered by TensorBoard), stored under ``tag/text_summary``.

    Args:
        tag (str): the summary's tag (``/text_summary`` is appended).
        text (str): the text.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> text("notes", "hi").value[0].tag
        'notes/text_summary'
    """
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                        tensor_shape=_shape([1]))
    meta = _plugin("text", TextPluginData(version=0).SerializeToString())
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=meta, tensor=proto)])


# --------------------------------------------------------------------------------------------
# histograms


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits,  # noqa: A002
                  bucket_counts) -> Summary:
    """A histogram summary from precomputed statistics.

    ``bucket_limits[i]`` is the right edge of bucket ``i``, holding ``bucket_counts[i]``.

    Args:
        name (str): the summary's tag.
        min (float): the smallest value.
        max (float): the largest value.
        num (int): how many values.
        sum (float): their sum.
        sum_squares (float): the sum of their squares.
        bucket_limits (list of float): each bucket's right edge.
        bucket_counts (list of int): how many values each bucket holds.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> histogram_raw("h", 0, 1, 2, 1, 1, [0.5, 1.0], [1, 1]).value[0].histo.num
        2.0
    """
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None) -> HistogramProto:
    """The ``HistogramProto`` of ``values`` binned by ``numpy.histogram(values, bins)``.

    Runs of empty buckets at both ends are dropped, keeping one empty bucket before the
    first full one so that TensorBoard knows where the data starts; with ``max_bins``,
    neighbouring buckets are merged until at most that many remain.

    Args:
        values (numpy.ndarray): the values (any shape; flattened).
        bins: as ``numpy.histogram``'s (a count, the edges, or a rule such as ``"auto"``).
        max_bins (int, optional): merge buckets until at most this many remain.

    Returns:
        HistogramProto: the buckets and statistics.

    Example::

        >>> h = make_histogram(np.array([0.0, 1.0, 1.0]), bins=2)
        >>> list(h.bucket), list(h.bucket_limit)
        ([0.0, 1.0, 2.0], [0.0, 0.5, 1.0])
    """
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    n = len(counts)
    if max_bins is not None and n > max_bins:
        group = n // max_bins
        if n % group:
            counts = np.pad(counts, (0, group - n % group))
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    full = np.flatnonzero(counts)
    if full.size == 0:
        raise ValueError("The histogram is empty: no value fell inside the bins.")
    first, last = int(full[0]), int(full[-1])
    if first > 0:
        counts = counts[first - 1:last + 1]
    else:
        counts = np.concatenate([[0], counts[:last + 1]])
    limits = limits[first:last + 2]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(),
                          bucket=counts.tolist())


def histogram(name, values, bins, max_bins=None) -> Summary:
    """A histogram summary of ``values`` (any shape; flattened). See ``make_histogram``.

    Args:
        name (str): the summary's tag.
        values (Tensor or numpy.ndarray): the values.
        bins: as ``numpy.histogram``'s.
        max_bins (int, optional): merge buckets until at most this many remain.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> histogram("w", ember.arange(4.0), bins=2).value[0].histo.num
        4.0
    """
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


# --------------------------------------------------------------------------------------------
# images, video, audio


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    # NOTE [ Image scaling ]: float images are in [0, 1] and scale by 255; uint8 images are
    # taken as they are; both are clipped to [0, 255] (as PyTorch's writer does).
    scale = 1 if arr.dtype == np.uint8 else 255
    return (arr.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def make_image(tensor, rescale=1, rois=None, labels=None) -> Summary.Image:
    """A PNG ``Summary.Image`` from a uint8 HWC array, optionally resized and with boxes.

    Args:
        tensor (numpy.ndarray): a uint8 ``(H, W, C)`` image.
        rescale (float): scale both sides by this. Default: 1.
        rois (numpy.ndarray, optional): ``(N, 4)`` boxes ``(xmin, ymin, xmax, ymax)`` to draw.
        labels (list of str, optional): a label per box.

    Returns:
        Summary.Image: the encoded PNG.

    Example::

        >>> make_image(np.zeros((2, 3, 3), np.uint8)).width
        3
    """
    from PIL import Image

    height, width, channels = tensor.shape
    img = Image.fromarray(tensor)
    if rois is not None:
        img = draw_boxes(img, rois, labels=labels)
    img = img.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channels,
                         encoded_image_string=buf.getvalue())


def image(tag, tensor, rescale=1, dataformats="NCHW") -> Summary:
    """An image summary; ``dataformats`` names ``tensor``'s axes (see ``convert_to_HWC``).

    Float images are taken to be in [0, 1]; uint8 images in [0, 255].

    Args:
        tag (str): the summary's tag.
        tensor (Tensor or numpy.ndarray): the image, float in [0, 1] or uint8.
        rescale (float): scale both sides by this. Default: 1.
        dataformats (str): ``tensor``'s axes (``"CHW"``, ``"HWC"``, ``"HW"``, ``"NCHW"``
            for a grid of images). Default: ``"NCHW"``.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> image("x", ember.zeros(3, 4, 5), dataformats="CHW").value[0].image.height
        4
    """
    arr = convert_to_HWC(make_np(tensor), dataformats)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(_to_uint8(arr),
                                                                  rescale=rescale))])


def draw_boxes(disp_image, boxes, labels=None):
    """Draw red boxes ``(xmin, ymin, xmax, ymax)`` with optional labels on a PIL image.

    Args:
        disp_image (PIL.Image.Image): the image, drawn on in place.
        boxes (numpy.ndarray): ``(N, 4)`` boxes ``(xmin, ymin, xmax, ymax)``.
        labels (list of str, optional): a label per box.

    Returns:
        PIL.Image.Image: ``disp_image``.

    Example::

        >>> from PIL import Image
        >>> img = draw_boxes(Image.new("RGB", (8, 8)), np.array([[1, 1, 5, 5]]))
        >>> img.getpixel((1, 1))
        (255, 0, 0)
    """
    from PIL import ImageDraw, ImageFont

    draw = ImageDraw.Draw(disp_image)
    font = ImageFont.load_default()
    for i in range(boxes.shape[0]):
        x0, y0, x1, y1 = (float(v) for v in boxes[i, :4])
        draw.line([(x0, y0), (x0, y1), (x1, y1), (x1, y0), (x0, y0)], width=2, fill="Red")
        if labels is not None:
            left, top, right, bottom = font.getbbox(labels[i])
            tw, th = right - left, bottom - top
            m = np.ceil(0.05 * th)
            draw.rectangle([(x0, y1 - th - 2 * m), (x0 + tw, y1)], fill="Red")
            draw.text((x0 + m, y1 - th - m), labels[i], fill="black", font=font)
    return disp_image


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW",
                labels=None) -> Summary:
    """An image summary with bounding boxes ``(N, 4)`` drawn on it.

    Args:
        tag (str): the summary's tag.
        tensor_image (Tensor or numpy.ndarray): the image, float in [0, 1] or uint8.
        tensor_boxes (Tensor or numpy.ndarray): ``(N, 4)`` boxes ``(xmin, ymin, xmax, ymax)``.
        rescale (float): scale both sides by this. Default: 1.
        dataformats (str): ``tensor_image``'s axes. Default: ``"CHW"``.
        labels (list of str, optional): a label per box.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> s = image_boxes("b", ember.zeros(3, 8, 8), ember.tensor([[1, 1, 5, 5]]))
        >>> s.value[0].image.width
        8
    """
    arr = convert_to_HWC(make_np(tensor_image), dataformats)
    img = make_image(_to_uint8(arr), rescale=rescale, rois=make_np(tensor_boxes),
                     labels=labels)
    return Summary(value=[Summary.Value(tag=tag, image=img)])


def make_video(tensor, fps) -> Summary.Image:
    """An animated-GIF ``Summary.Image`` from a uint8 ``(T, H, W, C)`` array.

    NOTE [ Video without moviepy ]: PyTorch encodes the GIF with moviepy; Pillow, which
    TensorBoard's image path needs anyway, writes animated GIFs itself, so ember uses it
    and ``add_video`` works without another package.

    Args:
        tensor (numpy.ndarray): uint8 frames ``(T, H, W, C)``, C being 1, 3 or 4.
        fps (float): frames per second.

    Returns:
        Summary.Image: the encoded GIF.

    Example::

        >>> make_video(np.zeros((2, 4, 4, 3), np.uint8), fps=4).encoded_image_string[:3]
        b'GIF'
    """
    from PIL import Image

    t, h, w, c = tensor.shape
    frames = [Image.fromarray(f[:, :, 0] if c == 1 else f) for f in tensor]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:],
                   duration=max(1, int(round(1000 / fps))), loop=0)
    return Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())


def video(tag, tensor, fps=4) -> Summary:
    """A video summary from ``(N, T, C, H, W)`` frames (float in [0, 1] or uint8), as a GIF.

    Args:
        tag (str): the summary's tag.
        tensor (Tensor or numpy.ndarray): ``(N, T, C, H, W)`` frames (N videos tiled).
        fps (float): frames per second. Default: 4.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> video("v", ember.rand(1, 2, 3, 4, 4)).value[0].image.encoded_image_string[:3]
        b'GIF'
    """
    arr = _to_uint8(prepare_video(make_np(tensor)))
    return Summary(value=[Summary.Value(tag=tag, image=make_video(arr, fps))])


def audio(tag, tensor, sample_rate=44100) -> Summary:
    """A mono audio summary (16-bit WAV) from samples in [-1, 1] (clipped beyond).

    Args:
        tag (str): the summary's tag.
        tensor (Tensor or numpy.ndarray): 1-D samples in [-1, 1].
        sample_rate (int): samples per second. Default: 44100.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> audio("a", ember.zeros(8)).value[0].audio.length_frames
        8
    """
    import wave

    arr = make_np(tensor).squeeze()
    if arr.ndim != 1:
        raise ValueError("input tensor should be 1 dimensional.")
    arr = (arr.clip(-1, 1) * np.iinfo(np.int16).max).astype("<i2")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(sample_rate)
        w.writeframes(arr.tobytes())
    snd = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=arr.shape[-1],
                        encoded_audio_string=buf.getvalue(), content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=snd)])


# --------------------------------------------------------------------------------------------
# custom scalars, PR curves, hparams, meshes


def custom_scalars(layout) -> Summary:
    """The custom-scalars plugin's layout: ``{category: {title: [kind, tags]}}``.

    ``kind`` is ``"Multiline"`` (any number of tag regexes) or ``"Margin"`` (three tags:
    value, lower, upper).

    Args:
        layout (dict): ``{category: {chart title: [kind, tags]}}``.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> custom_scalars({"c": {"t": ["Multiline", ["a", "b"]]}}).value[0].tag
        'custom_scalars__config__'
    """
    categories = []
    for category, charts in layout.items():
        out = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise ValueError(f"a Margin chart takes 3 tags, got {len(tags)}")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1],
                                                              upper=tags[2])
                out.append(layout_pb2.Chart(
                    title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                out.append(layout_pb2.Chart(
                    title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=out))
    proto = TensorProto(dtype="DT_STRING",
                        string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin("custom_scalars"))])


def _pr_summary(tag, data, num_thresholds) -> Summary:
    meta = _plugin("pr_curves", PrCurvePluginData(version=0, num_thresholds=num_thresholds)
                   .SerializeToString())
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(),
                        tensor_shape=_shape(data.shape))
    return Summary(value=[Summary.Value(tag=tag, metadata=meta, tensor=proto)])


def compute_curve(labels, predictions, num_thresholds=None, weights=None) -> np.ndarray:
    """The rows TP, FP, TN, FN, precision, recall at ``num_thresholds`` evenly spaced thresholds.

    Predictions in [0, 1] fall into ``num_thresholds`` buckets; counts at threshold ``i``
    are those of the predictions in bucket ``i`` or above.

    Args:
        labels (numpy.ndarray): the true labels, 0 or 1.
        predictions (numpy.ndarray): the predicted probabilities, in [0, 1].
        num_thresholds (int): how many thresholds.
        weights (numpy.ndarray, optional): a weight per example. Default: 1 each.

    Returns:
        numpy.ndarray: six rows of ``num_thresholds`` values.

    Example::

        >>> compute_curve(np.array([0, 1]), np.array([0.2, 0.9]), num_thresholds=3)[0]
        array([1., 1., 0.])
    """
    w = 1.0 if weights is None else weights
    buckets = np.floor(predictions * (num_thresholds - 1)).astype(np.int32)
    pos = labels.astype(np.float64)
    rng = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(buckets, bins=num_thresholds, range=rng, weights=pos * w)
    fp_b, _ = np.histogram(buckets, bins=num_thresholds, range=rng, weights=(1.0 - pos) * w)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(1e-7, tp + fp)
    recall = tp / np.maximum(1e-7, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None) -> Summary:
    """A precision-recall curve summary (``num_thresholds`` is capped at 127, as in PyTorch).

    Args:
        tag (str): the summary's tag.
        labels (Tensor or numpy.ndarray): the true labels, 0 or 1.
        predictions (Tensor or numpy.ndarray): the predicted probabilities, in [0, 1].
        num_thresholds (int): how many thresholds. Default: 127.
        weights (numpy.ndarray, optional): a weight per example. Default: 1 each.

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> s = pr_curve("pr", np.array([0, 1]), np.array([0.2, 0.9]), num_thresholds=3)
        >>> list(s.value[0].tensor.tensor_shape.dim[1:2])[0].size
        3
    """
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(make_np(labels), make_np(predictions), num_thresholds=num_thresholds,
                         weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127,
                 weights=None) -> Summary:
    """A precision-recall curve summary from precomputed counts (six rows of equal length).

    Args:
        tag (str): the summary's tag.
        tp, fp, tn, fn (numpy.ndarray): true and false positives and negatives per
            threshold.
        precision, recall (numpy.ndarray): precision and recall per threshold.
        num_thresholds (int): how many thresholds. Default: 127.
        weights: accepted for PyTorch compatibility (unused).

    Returns:
        Summary: the summary, for ``FileWriter.add_summary``.

    Example::

        >>> z = np.zeros(3)
        >>> pr_curve_raw("pr", z, z, z, z, z, z, 3).value[0].tag
        'pr'
    """
    num_thresholds = min(num_thresholds, 127)
    data = np.stack([make_np(x) for x in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, data, num_thresholds)


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The three summaries of the hparams plugin: experiment, session start, session end.

    Args:
        hparam_dict: name -> value (int, float, bool, str, one-element tensor, or None to
            skip). Numbers and bools are stored as numbers, as PyTorch stores them.
        metric_dict: metric tag -> value; only the tags are written here.
        hparam_domain_discrete: optional name -> list of the values that hparam can take.

    Returns:
        (experiment, session_start_info, session_end_info) ``Summary`` messages.

    Example::

        >>> exp, ssi, sei = hparams({"lr": 0.1}, {"loss": 1.0})
        >>> exp.value[0].tag
        '_hparams_/experiment'
    """
    from ..._core.tensor import Tensor
    from tensorboard.plugins.hparams import metadata as hp_meta
    from tensorboard.plugins.hparams.api_pb2 import (
        DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status,
    )
    from tensorboard.plugins.hparams.plugin_data_pb2 import (
        HParamsPluginData, SessionEndInfo, SessionStartInfo,
    )

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, "
                        "nothing logged.")
    for k, v in domains.items():
        if (k not in hparam_dict or not isinstance(v, list)
                or not all(isinstance(d, type(hparam_dict[k])) for d in v)):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same "
                            f"type as hparam_dict[{k}].")

    def domain(k, field):
        if k not in domains:
            return None
        return struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in domains[k]])

    infos = []
    ssi = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, Tensor):
            v = float(make_np(v).reshape(-1)[0])
        if isinstance(v, (int, float, np.number)):  # bool included, as PyTorch does
            ssi.hparams[k].number_value = v
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64"),
                                    domain_discrete=domain(k, "number_value")))
        elif isinstance(v, str):
            ssi.hparams[k].string_value = v
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_STRING"),
                                    domain_discrete=domain(k, "string_value")))
        else:
            raise ValueError("value should be one of int, float, str, bool, or ember.Tensor")

    def wrap(tag, **content):
        data = HParamsPluginData(version=hp_meta.PLUGIN_DATA_VERSION, **content)
        meta = _plugin(hp_meta.PLUGIN_NAME, data.SerializeToString())
        return Summary(value=[Summary.Value(tag=tag, metadata=meta)])

    exp = Experiment(hparam_infos=infos,
                     metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (wrap(hp_meta.EXPERIMENT_TAG, experiment=exp),
            wrap(hp_meta.SESSION_START_INFO_TAG, session_start_info=ssi),
            wrap(hp_meta.SESSION_END_INFO_TAG,
                 session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))


def mesh(tag, vertices, colors, faces, config_dict, display_name=None,
         description=None) -> Summary:
    """A 3-D mesh / point-cloud summary for the mesh plugin.

    Args:
        vertices: ``(B, N, 3)`` positions; colors: ``(B, N, 3)`` uint8 or None;
            faces: ``(B, F, 3)`` vertex indices or None.
        config_dict: the three.js scene configuration (camera, lights, material), or None.

    Returns:
        Summary with one value per given component.

    Example::

        >>> len(mesh("m", ember.zeros(1, 4, 3), None, None, None).value)
        1
    """
    from tensorboard.plugins.mesh import metadata as mesh_meta
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData

    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(t, kind) for t, kind in ((vertices, MeshPluginData.VERTEX),
                                       (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if t is not None]
    components = mesh_meta.get_components_bitmask([kind for _, kind in parts])
    values = []
    for t, kind in parts:
        arr = make_np(t).astype(np.float32)
        meta = mesh_meta.create_summary_metadata(tag, display_name, kind, components, arr.shape,
                                                 description, json_config=json_config)
        proto = TensorProto(dtype="DT_FLOAT", float_val=arr.reshape(-1).tolist(),
                            tensor_shape=_shape(arr.shape))
        values.append(Summary.Value(tag=mesh_meta.get_instance_name(tag, kind), tensor=proto,
                                    metadata=meta))
    return Summary(value=values)

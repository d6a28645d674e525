"""``SummaryWriter`` and ``FileWriter``: TensorBoard event files from a training script.

NOTE [ TensorBoard file format ]
An event file is a sequence of TFRecord-framed ``Event`` protocol buffers (length, CRC of
the length, bytes, CRC of the bytes), named ``events.out.tfevents.<time>.<host>.<pid>.<n>``
plus a suffix. Ember writes it with the ``tensorboard`` package's own ``EventFileWriter``
(a background thread, a queue of ``max_queue`` events, a flush every ``flush_secs``) and
builds the messages from that package's protobufs -- the same pieces PyTorch's writer uses,
so files from ember and from PyTorch are alike and TensorBoard (the reader that matters)
reads them with its own code. The alternative was ``tensorboardX``, which carries its own
copy of the protobufs and writer: one more package to pin, whose copies trail
TensorBoard's, while ``tensorboard`` is what a user installs to *view* the logs anyway.
So the optional extra is ``tensorboard`` (``pip install 'ember[tensorboard]'``).
"""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from . import _embedding
from ._convert import figure_to_image, make_np
from ._graph import graph
from .summary import (
    audio, custom_scalars, histogram, histogram_raw, hparams, image, image_boxes, mesh,
    pr_curve, pr_curve_raw, scalar, tensor_proto, text, video,
)

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes ``Event`` protocol buffers to one event file in ``log_dir``, asynchronously.

    The lower layer under ``SummaryWriter``; most users want that instead.

    Args:
        log_dir: the directory (created if missing).
        max_queue: events held before a write is forced.
        flush_secs: seconds between automatic flushes.
        filename_suffix: appended to the event file's name.

    Example::

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     fw = FileWriter(d)
        ...     fw.add_summary(scalar("x", 1.0), global_step=0)
        ...     fw.close()
    """

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix="") -> None:
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs,
                                            filename_suffix)

    def get_logdir(self):
        """The directory the event file is in."""
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None) -> None:
        """Stamp ``event`` with ``walltime`` (default now) and ``step``, and queue it."""
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None) -> None:
        """Queue a ``Summary`` as an event at ``global_step``."""
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None) -> None:
        """Queue a ``(GraphDef, RunMetadata)`` pair as the run's graph and its step stats."""
        graph_def, stepstats = graph_profile
        self.add_event(event_pb2.Event(graph_def=graph_def.SerializeToString()), None, walltime)
        trm = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=stepstats.SerializeToString())
        self.add_event(event_pb2.Event(tagged_run_metadata=trm), None, walltime)

    def add_onnx_graph(self, graph, walltime=None) -> None:
        """Queue a ``GraphDef`` converted from an ONNX model."""
        self.add_event(event_pb2.Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self) -> None:
        """Write the queued events to disk."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """Reopen after ``close`` (a new event file)."""
        self.event_writer.reopen()


def _default_bins():
    # TensorFlow's default histogram buckets: +-1e-12 growing by 10% to 1e20, and 0.
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0] + pos


class SummaryWriter:
    """Writes scalars, histograms, images, text, graphs, embeddings... for TensorBoard.

    The writer appends events to a new file in ``log_dir`` on a background thread; call
    ``flush()`` to force them to disk and ``close()`` (or use ``with``) at the end.
    Point TensorBoard at the parent directory: ``tensorboard --logdir runs``.

    Args:
        log_dir (str, optional): where to write. Default ``runs/<Mon>DD_HH-MM-SS_<host><comment>``,
            a new directory per run, as PyTorch names it.
        comment (str): appended to the default ``log_dir`` (ignored when ``log_dir`` is given).
        purge_step (int, optional): when resuming a run that crashed at step ``T + X``
            after a checkpoint at ``T``, pass ``T``: TensorBoard drops the old events with
            step ``>= T``.
        max_queue (int): events queued before a write is forced. Default 10.
        flush_secs (int): seconds between automatic flushes. Default 120.
        filename_suffix (str): appended to every event file's name in this directory.

    Example::

        >>> import tempfile
        >>> from ember.utils.tensorboard import SummaryWriter
        >>> with tempfile.TemporaryDirectory() as d:
        ...     with SummaryWriter(d) as w:
        ...         for step in range(3):
        ...             w.add_scalar("loss", 1.0 / (step + 1), step)
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix="") -> None:
        if not log_dir:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", stamp + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        self.default_bins = _default_bins()

    def _get_file_writer(self) -> FileWriter:
        """The main file writer, (re)created after ``close``."""
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                # A START session log at step T tells TensorBoard to drop older steps >= T.
                self.file_writer.add_event(Event(step=self.purge_step,
                                                 file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=self.purge_step, session_log=SessionLog(
                    status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        """The directory this writer writes to.

        Example::

            >>> SummaryWriter(d).get_logdir() == d  # doctest: +SKIP
            True
        """
        return self.log_dir

    # -- scalars ----------------------------------------------------------------------------

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False) -> None:
        """Log one number.

        Args:
            tag (str): the series name (``"train/loss"``; slashes group charts).
            scalar_value (float or one-element tensor): the value.
            global_step (int, optional): the x-axis position.
            walltime (float, optional): seconds since the epoch; default now.
            new_style (bool): store as a tensor (faster to load in TensorBoard).
            double_precision (bool): with ``new_style``, keep float64.

        Example::

            >>> w.add_scalar("loss", loss.item(), step)  # doctest: +SKIP
        """
        summary = scalar(tag, scalar_value, new_style=new_style,
                         double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None) -> None:
        """Log several numbers on one chart: each key is a run ``<log_dir>/<main_tag>_<key>``.

        Args:
            main_tag (str): the chart's tag.
            tag_scalar_dict (dict): key -> value.
            global_step (int, optional), walltime (float, optional): as in ``add_scalar``.

        Example::

            >>> w.add_scalars("loss", {"train": 0.3, "val": 0.4}, step)  # doctest: +SKIP
        """
        walltime = time.time() if walltime is None else walltime
        root = self._get_file_writer().get_logdir()
        for tag, value in tag_scalar_dict.items():
            run_dir = root + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(run_dir)
            if fw is None:
                fw = self.all_writers[run_dir] = FileWriter(run_dir, self.max_queue,
                                                            self.flush_secs,
                                                            self.filename_suffix)
            fw.add_summary(scalar(main_tag, value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None) -> None:
        """Log a whole tensor (read back as a tensor event).

        Example::

            >>> w.add_tensor("w", ember.ones(2, 2), 0)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    # -- histograms ---------------------------------------------------------------------------

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """Log the distribution of ``values``.

        Args:
            tag (str): the name.
            values (tensor or array): any shape; flattened.
            global_step (int, optional), walltime (float, optional): as in ``add_scalar``.
            bins (str or int or sequence): ``"tensorflow"`` (TensorFlow's exponential
                buckets, the default) or anything ``numpy.histogram`` takes (``"auto"``, a
                count, edges).
            max_bins (int, optional): merge buckets until at most this many remain.

        Example::

            >>> w.add_histogram("fc1.weight", model.fc1.weight, step)  # doctest: +SKIP
        """
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares,  # noqa: A002
                          bucket_limits, bucket_counts, global_step=None,
                          walltime=None) -> None:
        """Log a histogram from precomputed statistics.

        ``bucket_limits[i]`` is the right edge of bucket ``i``; both lists have one length.

        Raises:
            ValueError: when the lists' lengths differ.

        Example::

            >>> w.add_histogram_raw("h", 0, 2, 3, 3, 5, [1, 2], [1, 2], 0)  # doctest: +SKIP
        """
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        summary = histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits,
                                bucket_counts)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    # -- images, figures, video, audio --------------------------------------------------------

    def add_image(self, tag, img_tensor, global_step=None, walltime=None,
                  dataformats="CHW") -> None:
        """Log an image.

        Args:
            tag (str): the name.
            img_tensor (tensor or array): float in [0, 1] or uint8 in [0, 255], laid out as
                ``dataformats`` says.
            dataformats (str): ``"CHW"`` (default), ``"HWC"``, ``"HW"`` (gray); one-channel
                images show as gray.

        Example::

            >>> w.add_image("sample", ember.rand(3, 28, 28), step)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None,
                   dataformats="NCHW") -> None:
        """Log a batch of images, tiled into one grid (8 per row).

        Args:
            img_tensor: ``(N, C, H, W)`` by default, or as ``dataformats`` says (``"NHWC"``).

        Example::

            >>> w.add_images("batch", images, step)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None,
                             walltime=None, rescale=1, dataformats="CHW", labels=None) -> None:
        """Log an image with bounding boxes ``(N, 4)`` as ``(xmin, ymin, xmax, ymax)``.

        Args:
            labels (list of str, optional): one label per box.

        Example::

            >>> w.add_image_with_boxes("det", img, ember.tensor([[2, 2, 9, 9]]))  # doctest: +SKIP
        """
        if labels is not None:
            if isinstance(labels, str):
                labels = [labels]
            if len(labels) != box_tensor.shape[0]:
                labels = None
        summary = image_boxes(tag, img_tensor, box_tensor, rescale=rescale,
                              dataformats=dataformats, labels=labels)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None) -> None:
        """Render a matplotlib figure (or a list of them, tiled) into an image and log it.

        Args:
            figure: ``matplotlib.figure.Figure`` or a list of them.
            close (bool): close the figure(s) afterwards.

        Example::

            >>> fig = plt.figure(); plt.plot([1, 2]); w.add_figure("plot", fig, 0)  # doctest: +SKIP
        """
        if isinstance(figure, list):
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                           dataformats="NCHW")
        else:
            self.add_image(tag, figure_to_image(figure, close), global_step, walltime,
                           dataformats="CHW")

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None) -> None:
        """Log a video ``(N, T, C, H, W)`` (float in [0, 1] or uint8) as an animated GIF.

        Pillow encodes it (see NOTE [ Video without moviepy ] in summary.py).

        Example::

            >>> w.add_video("rollout", ember.rand(1, 8, 3, 32, 32), fps=4)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100,
                  walltime=None) -> None:
        """Log mono audio: samples in [-1, 1], shape ``(1, L)`` or ``(L,)``.

        Example::

            >>> w.add_audio("tone", ember.sin(ember.arange(8000.0)), 0, 8000)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(audio(tag, snd_tensor, sample_rate=sample_rate),
                                            global_step, walltime)

    # -- text, hparams, curves -------------------------------------------------------------

    def add_text(self, tag, text_string, global_step=None, walltime=None) -> None:
        """Log text (rendered as Markdown).

        Example::

            >>> w.add_text("config", "lr=0.1, **adam**", 0)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None) -> None:
        """Log a run's hyperparameters and final metrics for the HParams dashboard.

        They go to a sub-run ``<log_dir>/<run_name>`` (default: the current time), with
        each metric also logged as a scalar there.

        Args:
            hparam_dict (dict): name -> bool/str/int/float/None.
            metric_dict (dict): metric tag -> value (use tags not otherwise logged).
            hparam_domain_discrete (dict, optional): name -> list of possible values.
            run_name (str, optional): the sub-run's name.
            global_step (int, optional): the step to record.

        Raises:
            TypeError: if ``hparam_dict`` or ``metric_dict`` is not a dict.

        Example::

            >>> w.add_hparams({"lr": 0.1, "bsize": 32}, {"hparam/loss": 0.2})  # doctest: +SKIP
        """
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_name = run_name or str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            for s in (exp, ssi, sei):
                w_hp.file_writer.add_summary(s, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127,
                     weights=None, walltime=None) -> None:
        """Log a precision-recall curve.

        Args:
            labels (tensor or array): ground truth, 0/1 (or bool).
            predictions (tensor or array): probabilities in [0, 1], same shape.
            num_thresholds (int): points on the curve (at most 127).

        Example::

            >>> w.add_pr_curve("pr", labels, probs, step)  # doctest: +SKIP
        """
        summary = pr_curve(tag, make_np(labels), make_np(predictions), num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts,
                         true_negative_counts, false_negative_counts, precision, recall,
                         global_step=None, num_thresholds=127, weights=None,
                         walltime=None) -> None:
        """Log a precision-recall curve from precomputed counts.

        Example::

            >>> w.add_pr_curve_raw("pr", tp, fp, tn, fn, p, r, 0, len(tp))  # doctest: +SKIP
        """
        summary = pr_curve_raw(tag, true_positive_counts, false_positive_counts,
                               true_negative_counts, false_negative_counts, precision, recall,
                               num_thresholds, weights)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_custom_scalars(self, layout) -> None:
        """Lay out the Custom Scalars dashboard: ``{category: {title: [kind, tags]}}``.

        Example::

            >>> layout = {"loss": {"both": ["Multiline", ["loss/.*"]]}}
            >>> w.add_custom_scalars(layout)  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(custom_scalars(layout))

    def add_custom_scalars_multilinechart(self, tags, category="default",
                                          title="untitled") -> None:
        """One multi-line chart of ``tags`` on the Custom Scalars dashboard.

        Example::

            >>> w.add_custom_scalars_multilinechart(["loss/train", "loss/val"])  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(custom_scalars({category: {title: ["Multiline",
                                                                              tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default",
                                       title="untitled") -> None:
        """One margin chart (value, lower, upper: three tags) on the Custom Scalars dashboard.

        Example::

            >>> w.add_custom_scalars_marginchart(["m", "lo", "hi"])  # doctest: +SKIP
        """
        if len(tags) != 3:
            raise ValueError(f"Expected 3 tags, got {len(tags)}.")
        self._get_file_writer().add_summary(custom_scalars({category: {title: ["Margin",
                                                                              tags]}}))

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None,
                 global_step=None, walltime=None) -> None:
        """Log a 3-D mesh or point cloud (``(B, N, 3)`` vertices) for the mesh plugin.

        Example::

            >>> w.add_mesh("cloud", ember.rand(1, 100, 3))  # doctest: +SKIP
        """
        self._get_file_writer().add_summary(mesh(tag, vertices, colors, faces, config_dict),
                                            global_step, walltime)

    # -- graph, embeddings ------------------------------------------------------------------

    def add_graph(self, model, input_to_model=None, verbose=False,
                  use_strict_trace=True) -> None:
        """Log a module's op graph, traced by running ``model(*input_to_model)`` once.

        The trace goes through ember's dispatcher (NOTE [ Graph trace through the
        dispatcher ] in _graph.py): one node per op, grouped by submodule as
        ``Net/Linear[fc1]``, parameters as ``prim::GetAttr`` nodes.

        Args:
            model (nn.Module): the model.
            input_to_model (tensor or tuple of tensors): its inputs.
            verbose (bool): print the recorded nodes.
            use_strict_trace (bool): accepted for PyTorch's signature.

        Example::

            >>> w.add_graph(model, ember.rand(1, 3, 28, 28))  # doctest: +SKIP
        """
        self._get_file_writer().add_graph(graph(model, input_to_model, verbose,
                                                use_strict_trace))

    def add_onnx_graph(self, prototxt) -> None:
        """Log the graph of an ONNX model file (needs the ``onnx`` package).

        Example::

            >>> w.add_onnx_graph("model.onnx")  # doctest: +SKIP
        """
        self._get_file_writer().add_onnx_graph(_load_onnx_graph(prototxt))

    @staticmethod
    def _encode(rawstr):
        # A tag becomes a directory name: escape "%", "/" and "\".
        return (rawstr.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c"))

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None,
                      tag="default", metadata_header=None) -> None:
        """Log points for the Projector (PCA/t-SNE/UMAP views of an embedding).

        Writes ``<log_dir>/<step:05d>/<tag>/tensors.tsv`` (and ``metadata.tsv``,
        ``sprite.png``) and updates ``projector_config.pbtxt``.

        Args:
            mat (tensor or array): ``(N, D)``, one row per point.
            metadata (list, optional): N labels, or N rows of columns with ``metadata_header``.
            label_img (tensor, optional): ``(N, C, H, W)`` thumbnails, float in [0, 1].
            global_step (int, optional): default 0.
            tag (str): the embedding's name.
            metadata_header (list of str, optional): column names.

        Raises:
            ValueError: if ``mat`` is not 2-D or the counts disagree.

        Example::

            >>> w.add_embedding(features, metadata=labels, tag="mnist")  # doctest: +SKIP
        """
        mat = make_np(mat)
        if global_step is None:
            global_step = 0
        subdir = f"{str(global_step).zfill(5)}/{self._encode(tag)}"
        save_path = os.path.join(self._get_file_writer().get_logdir(), subdir)
        if os.path.exists(save_path) and not os.path.isdir(save_path):
            raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. "
                                     f"Cannot proceed.")
        if mat.ndim != 2:
            raise ValueError("mat should be 2D, where mat.size(0) is the number of data points")
        if metadata is not None and mat.shape[0] != len(metadata):
            raise ValueError("#labels should equal with #data points")
        if label_img is not None and mat.shape[0] != label_img.shape[0]:
            raise ValueError("#images should equal with #data points")
        os.makedirs(save_path, exist_ok=True)
        if metadata is not None:
            _embedding.write_tsv(metadata, save_path, metadata_header=metadata_header)
        if label_img is not None:
            _embedding.write_sprite(label_img, save_path)
        _embedding.write_matrix(mat, save_path)
        if not hasattr(self, "_projector_config"):
            from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

            self._projector_config = ProjectorConfig()
        self._projector_config.embeddings.extend([_embedding.embedding_info(
            metadata, label_img, subdir, global_step, tag)])
        _embedding.write_config(self._get_file_writer().get_logdir(), self._projector_config)

    # -- lifetime -----------------------------------------------------------------------------

    def flush(self) -> None:
        """Write every pending event of this writer (and its ``add_scalars`` runs) to disk.

        Example::

            >>> w.flush()  # doctest: +SKIP
        """
        for fw in (self.all_writers or {}).values():
            fw.flush()

    def close(self) -> None:
        """Flush and close every file; a later ``add_*`` call opens a new event file.

        Example::

            >>> w.close()  # doctest: +SKIP
        """
        if self.all_writers is None:
            return
        for fw in self.all_writers.values():
            fw.flush()
            fw.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()


def _load_onnx_graph(path):
    """A ``GraphDef`` of an ONNX model file: one node per ONNX node, edges by value name."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError("add_onnx_graph needs the onnx package: pip install onnx") from e
    from tensorboard.compat.proto.attr_value_pb2 import AttrValue
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    from tensorboard.compat.proto.versions_pb2 import VersionDef

    g = onnx.load(path).graph
    made_by = {}
    nodes = []
    for v in g.input:
        made_by[v.name] = v.name
        nodes.append(NodeDef(name=v.name, op="Variable", attr={"dtype": AttrValue(s=b"")}))
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        nodes.append(NodeDef(name=name, op=n.op_type,
                             input=[made_by.get(x, x) for x in n.input],
                             attr={"parameters": AttrValue(s=str(n.attribute).encode())}))
        for out in n.output:
            made_by[out] = name
    return GraphDef(node=nodes, versions=VersionDef(producer=22))

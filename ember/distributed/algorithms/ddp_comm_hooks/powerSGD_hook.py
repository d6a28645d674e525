"""PowerSGD gradient compression for DDP (``torch.distributed.algorithms.ddp_comm_hooks.
powerSGD_hook``; Vogels et al., 2019).

NOTE [ PowerSGD ]
Each gradient matrix M (n x m; a parameter's gradient viewed as ``shape[0]`` rows) is
replaced by a rank-r approximation P Q^T found with one step of power iteration, sharing
only P (n x r) and Q (m x r) between ranks:

1. P = M Q (Q from the previous iteration when ``warm_start``, else random and
   orthonormalized); all-reduce P; orthonormalize P's columns;
2. Q = M^T P; all-reduce Q and divide by the world size;
3. M <- P Q^T.

Since M is linear in the gradient and P is shared, P Q^T is the approximation of the
*average* gradient. Tensors too small to gain (``(n + m) r * min_compression_rate >= n m``)
and 1-D ones are all-reduced as they are, in one flat message. With ``use_error_feedback``
what the approximation lost this iteration is added back to the next iteration's gradient.
The first ``start_powerSGD_iter`` iterations are plain all-reduce, as advised by the
paper. Each fresh Q takes the next seed of a NumPy generator seeded with ``random_seed``
(the same on every rank, so ranks agree) and is drawn with ``ember.randn`` under that seed
in a forked RNG, as PyTorch draws it: the same numbers, so results match PyTorch's (a
random test found NumPy's own normal draws differing there). ``batched_powerSGD_hook``
treats the whole bucket as one square matrix.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from . import default_hooks

__all__ = ["PowerSGDState", "batched_powerSGD_hook", "powerSGD_hook"]

_logger = logging.getLogger(__name__)


class PowerSGDState:
    """What PowerSGD keeps between iterations: its settings, the error-feedback residuals
    and the warm-start P and Q matrices of every bucket.

    Args:
        process_group: the group to average over (None: the default group).
        matrix_approximation_rank: the rank r of the approximation.
        start_powerSGD_iter: plain all-reduce before this iteration.
        min_compression_rate: compress a tensor only if it shrinks at least this much.
        use_error_feedback: carry the approximation error into the next iteration.
        warm_start: start power iteration from the last Q.
        orthogonalization_epsilon: added to column norms before dividing.
        random_seed: seed of the initial random Q (the same on every rank).
        compression_stats_logging_frequency, batch_tensors_with_same_shape: accepted for
            compatibility.

    Example::

        >>> st = PowerSGDState(process_group=None, matrix_approximation_rank=1)
        >>> st.iter, st.start_powerSGD_iter
        (0, 1000)
    """

    def __init__(self, process_group, matrix_approximation_rank=1, start_powerSGD_iter=1_000,
                 min_compression_rate=2, use_error_feedback=True, warm_start=True,
                 orthogonalization_epsilon=0, random_seed=0,
                 compression_stats_logging_frequency=10_000,
                 batch_tensors_with_same_shape=False):
        if (use_error_feedback or warm_start) and start_powerSGD_iter <= 1:
            raise ValueError("Expect `start_powerSGD_iter` > 1 if `use_error_feedback` or "
                             "`warm_start` is enabled, because PowerSGD can only be applied "
                             "after the first two iterations in DDP.")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)
        self.error_dict = {}
        self.p_memory_dict = {}
        self.q_memory_dict = {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def __getstate__(self):
        # a process group cannot be pickled: the saved state leaves it out, as PyTorch's does
        # (with the same logged note), and a loaded state joins the default group
        _logger.warning("NOTE: Process group is not serializable and excluded from a saved "
                        "state.")
        state = dict(self.__dict__)
        state.pop("process_group", None)
        return state

    def __setstate__(self, state):
        from ...distributed_c10d import _get_default_group

        self.process_group = _get_default_group()  # ValueError before init_process_group
        _logger.warning("NOTE: Process group will be set to a default group (i.e. the world "
                        "size).                If a different group is desired, please set "
                        "`self.process_group` after PowerSGD state is loaded.")
        self.__dict__.update(state)

    def maybe_increase_iter(self, bucket) -> None:
        """Count an iteration when the last bucket of one is reduced."""
        if bucket.is_last():
            self.iter += 1

    def compression_stats(self):
        """(compression rate, elements before, elements after) so far."""
        before, after = self.total_numel_before_compression, self.total_numel_after_compression
        return (before / after if after else 0.0), before, after


def _orthonormalize(m: np.ndarray, eps: float) -> None:
    """Gram-Schmidt on the columns of ``m`` (n x r), in place."""
    for i in range(m.shape[1]):
        col = m[:, i]
        norm = np.linalg.norm(col)
        if eps == 0 and norm == 0:
            col[...] = 0
        else:
            col /= norm + eps
        if i + 1 < m.shape[1]:
            rest = m[:, i + 1:]
            rest -= np.outer(col, col @ rest)


def _group_size(state):
    from .... import distributed as dist

    group = state.process_group if state.process_group is not None else dist.group.WORLD
    return group, dist.get_world_size(group)


def _allreduce_array(a: np.ndarray, group):
    """All-reduce a NumPy array in place (asynchronously): the Work handle."""
    from .... import distributed as dist, from_numpy

    return dist.all_reduce(from_numpy(a), group=group, async_op=True)


def _error_feedback(state, index, flat):
    """Add last iteration's error to ``flat`` (in place); a copy of the corrected input."""
    if not state.use_error_feedback:
        return None
    if index in state.error_dict:
        flat += state.error_dict[index]
    else:
        state.error_dict[index] = np.zeros_like(flat)
    return flat.copy()


def _random_q(state, shapes, dtype):
    """Fresh Q matrices: standard normal draws from ember's generator seeded with the
    state's next seed (the same on every rank), inside a forked RNG so the global stream
    is untouched -- PyTorch's draws, bit for bit (``randn`` follows its generator)."""
    from .... import float32, float64, manual_seed, randn, random

    seed = state.rng.randint(1_000_000_000)
    edtype = float64 if np.dtype(dtype) == np.float64 else float32
    with random.fork_rng(devices=[]):
        manual_seed(seed)
        return [randn(*s, dtype=edtype).numpy().astype(dtype) for s in shapes]


def powerSGD_hook(state, bucket):
    """Average the bucket with PowerSGD (see NOTE [ PowerSGD ]): each large enough
    gradient matrix travels as a rank-r factor pair.

    Args:
        state: a ``PowerSGDState``.
        bucket: the ``GradBucket``.

    Returns:
        Future holding the averaged (approximated) flat buffer.

    Example::

        >>> state = PowerSGDState(process_group=None, start_powerSGD_iter=10)
        >>> ddp.register_comm_hook(state, powerSGD_hook)  # doctest: +SKIP
    """
    from ..._future import Future

    group, size = _group_size(state)
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)
    flat = buffer._data.reshape(-1)
    dtype = flat.dtype if flat.dtype.kind == "f" and flat.dtype.itemsize >= 4 else np.float32
    work_flat = flat if dtype == flat.dtype else flat.astype(dtype)
    index = bucket.index()
    corrected = _error_feedback(state, index, work_flat)
    r = state.matrix_approximation_rank
    matrices, plain = [], []
    for p, off in zip(bucket.parameters(), bucket._offsets):
        n_el = p.numel()
        piece = work_flat[off:off + n_el]
        if p.dim() > 1:
            m = piece.reshape(p.shape[0], -1)
            k = min(m.shape[0], m.shape[1], r)
            if (m.shape[0] + m.shape[1]) * k * state.min_compression_rate < m.size:
                matrices.append((m, k))
                state.total_numel_before_compression += m.size
                state.total_numel_after_compression += (m.shape[0] + m.shape[1]) * k
                continue
        plain.append(piece)
        state.total_numel_before_compression += n_el
        state.total_numel_after_compression += n_el
    p_shapes = [(m.shape[0], k) for m, k in matrices]
    q_shapes = [(m.shape[1], k) for m, k in matrices]
    p_total = sum(a * b for a, b in p_shapes)
    q_total = sum(a * b for a, b in q_shapes)
    fresh = not state.warm_start or index not in state.p_memory_dict
    if fresh:
        state.p_memory_dict[index] = np.empty(p_total, dtype)
        state.q_memory_dict[index] = np.empty(q_total, dtype)
    p_mem, q_mem = state.p_memory_dict[index], state.q_memory_dict[index]
    ps, qs, at_p, at_q = [], [], 0, 0
    for (a, b), (c, d) in zip(p_shapes, q_shapes):
        ps.append(p_mem[at_p:at_p + a * b].reshape(a, b))
        qs.append(q_mem[at_q:at_q + c * d].reshape(c, d))
        at_p, at_q = at_p + a * b, at_q + c * d
    if fresh:
        for q, init in zip(qs, _random_q(state, q_shapes, dtype)):
            q[...] = init
            _orthonormalize(q, state.orthogonalization_epsilon)
    for (m, _), q, p in zip(matrices, qs, ps):
        np.matmul(m, q, out=p)
    plain_mem = np.concatenate(plain) if plain else np.empty(0, dtype)
    works = [_allreduce_array(plain_mem, group), _allreduce_array(p_mem, group)]

    def finish():
        for w in works:
            w.wait()
        np.divide(plain_mem, size, out=plain_mem)
        at = 0
        for piece in plain:
            piece[...] = plain_mem[at:at + piece.size]
            at += piece.size
        for p in ps:
            _orthonormalize(p, state.orthogonalization_epsilon)
        for (m, _), p, q in zip(matrices, ps, qs):
            np.matmul(m.T, p, out=q)
        _allreduce_array(q_mem, group).wait()
        np.divide(q_mem, size, out=q_mem)
        for (m, _), p, q in zip(matrices, ps, qs):
            np.matmul(p, q.T, out=m)
        if corrected is not None:
            state.error_dict[index] = corrected - work_flat
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        if work_flat is not flat:
            flat[...] = work_flat
        buffer._bump()
        state.maybe_increase_iter(bucket)
        fut.set_result(buffer)

    fut = Future()
    fut._waiter = finish
    fut._poll = lambda: all(w.is_completed() for w in works)
    return fut


def batched_powerSGD_hook(state, bucket):
    """PowerSGD on the whole bucket viewed as one square matrix (padded with zeros): fewer,
    larger messages, a coarser approximation (see NOTE [ PowerSGD ]).

    Args:
        state: a ``PowerSGDState``.
        bucket: the ``GradBucket``.

    Returns:
        Future holding the averaged (approximated) flat buffer.

    Example::

        >>> state = PowerSGDState(process_group=None, start_powerSGD_iter=10)
        >>> ddp.register_comm_hook(state, batched_powerSGD_hook)  # doctest: +SKIP
    """
    from ..._future import Future

    group, size = _group_size(state)
    buffer = bucket.buffer()
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return default_hooks._allreduce_fut(group, buffer)
    flat = buffer._data.reshape(-1)
    dtype = flat.dtype if flat.dtype.kind == "f" and flat.dtype.itemsize >= 4 else np.float32
    n = flat.size
    side = math.ceil(math.sqrt(n))
    padded = np.zeros(side * side, dtype)
    padded[:n] = flat
    index = bucket.index()
    corrected = _error_feedback(state, index, padded)
    m = padded.reshape(side, side)
    r = state.matrix_approximation_rank
    state.total_numel_before_compression += n
    state.total_numel_after_compression += 2 * side * r
    fresh = not state.warm_start or index not in state.p_memory_dict
    if fresh:
        state.p_memory_dict[index] = np.empty((side, r), dtype)
        q = state.q_memory_dict[index] = _random_q(state, [(side, r)], dtype)[0]
        _orthonormalize(q, state.orthogonalization_epsilon)
    p, q = state.p_memory_dict[index], state.q_memory_dict[index]
    np.matmul(m, q, out=p)
    work = _allreduce_array(p, group)

    def finish():
        work.wait()
        _orthonormalize(p, state.orthogonalization_epsilon)
        np.matmul(m.T, p, out=q)
        _allreduce_array(q, group).wait()
        q[...] /= size
        np.matmul(p, q.T, out=m)
        if corrected is not None:
            state.error_dict[index] = corrected - padded
        if not state.warm_start:
            state.p_memory_dict.clear()
            state.q_memory_dict.clear()
        flat[...] = padded[:n]
        buffer._bump()
        state.maybe_increase_iter(bucket)
        fut.set_result(buffer)

    fut = Future()
    fut._waiter = finish
    fut._poll = work.is_completed
    return fut

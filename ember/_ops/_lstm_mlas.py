"""The fused LSTM layer's per-step recurrent products on MLAS (NOTE [ LSTM step products on
MLAS ]); ``_lstm_layer_kernel`` and ``_lstm_layer_backward_kernel`` in ``nn_rnn.py`` call
``recurrent_weights`` and, where it gives weights, run each step's product through
``RecurrentWeights.product``.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from .. import _dispatch

# NOTE [ LSTM step products on MLAS ]
# Half of an LSTM layer's multiply-adds are its steps' small recurrent products, (B, P) @
# (P, 4H) forward and (B, 4H) @ (4H, P) backward, which the one-core loops run on NumPy's
# BLAS. Under ``OPENBLAS_CORETYPE=Haswell`` that BLAS is capped at AVX2; where ember runs
# its large float32 products on MLAS (NOTE [ Products past a pinned OpenBLAS ] in
# ember/_kernels/_mlas.py: by default where OpenBLAS is pinned below the CPU, or with
# ``EMBER_GEMM=mlas``) the steps' products go there too. The weight is the same for every
# step of a loop, so the loop makes a session whose weight is an initializer (the serialized
# model, zeros, is made once per shape; the session is handed the real weight's buffer with
# ``add_initializer``): onnxruntime packs it for MLAS once, instead of once per product, and
# the result stays bound, so a step only binds its left operand. Loops of fewer than
# ``STEP_PACK_MIN`` steps, which would not earn the session back, bind the weight to
# ``_mlas``'s shared sessions instead (packed by MLAS at every product). Median us per
# product, in one process under ``chrt -f 10`` (machine load 5-6), B=32, P=H=256:
#
#   product                  OpenBLAS-Haswell 1 thread | MLAS 1 thread | 2 | packed 1 | 2
#   (32, 256) @ (256, 1024)  164                       | 106           | 73 | 72      | 59
#   (32, 1024) @ (1024, 256) 153                       | 93            | 67 | 72      | 58
#
# One packing serves both a layer's forward and its backward. The session's graph holds
# w_hh (4H, P) itself as its one initializer under two nodes, ``Gemm(A, W, transB=1)`` for
# the forward's ``h @ w_hh.T`` and ``MatMul(E, W)`` for the backward's ``d @ w_hh``;
# onnxruntime runs every node of a graph and wants all its inputs, so a run feeds the idle
# node an empty (0, K) operand (~1 us). The forward's gates want the product of the weight
# with its sigmoid rows halved (NOTE [ Fused LSTM layer ] in nn_rnn.py); that is the
# unscaled product times the gate scales exactly (powers of two), so the float32 step kernel
# applies the scales and the bias as it reads the product (``lstm_step_forward_unscaled`` in
# ember/_kernels/_numba_rnn.py). The forward leaves its session to its backward in
# ``_HANDOFF``, keyed by the gate activations' array, which the layer saves for backward and
# hands back to it: the entry leaves with that array, and only the newest ``HANDOFF_SIZE``
# stay (each session holds a packed copy and a worker thread; a graph never run backward
# keeps none beyond those). A backward that finds none (saved-tensor hooks gave it other
# arrays, a second backward through a retained graph, an entry pushed out) packs the weight
# again. An in-place change to the weight between the two fails autograd's version check on
# the saved weight first. Gone per training step of the bench's 2-layer LSTM LM: two of its
# four sessions (0.45 ms each made and freed on a quiet machine, 1.1-1.3 ms inside the step),
# the scaled transposed copy of each weight, and a ``rec += bias`` pass per step. The step,
# in-process A/B under ``chrt -f 10`` (machine load 17-20, so one-thread step products):
# 0.96 of the same code with a session made again in each backward.
#
# Two MLAS threads are used unless the machine is oversubscribed (``_parallel.contended``: a
# worker would wait for a core every step), or ember is set to one thread. MLAS sums in
# another order than OpenBLAS, so results differ from the NumPy path's in the last bits, as
# the whole-sequence products' already do under MLAS. The loops split by hidden units (NOTE
# [ LSTM steps split by hidden units ] in _lstm_units.py) are not taken with MLAS chosen:
# their workers call NumPy's BLAS, and the packed products on two threads are faster than
# their steps. The bench's LSTM LM training step, in-process A/B under ``chrt -f 10`` with
# the machine at load 8-12 (so noisy): packed/NumPy-BLAS loops 0.74 (contended: one-core
# loops), 0.95 (``contended`` forced off: split loops); packed/weight-bound-per-product
# 0.74-0.90.

#: False keeps the steps' products on NumPy's BLAS even with MLAS chosen (tests, A/B)
STEP_ON_MLAS = [True]
#: the fewest steps for which a loop packs its weight in a session of its own (~0.35 ms,
#: 1.25 at load 9, against 14-34 us saved a product)
STEP_PACK_MIN = [16]
#: step products of fewer multiply-adds (B x 4H x P) stay on NumPy's BLAS, and a loop packs
#: its weight only where steps x multiply-adds reach ``STEP_PACK_MIN_WORK`` (NOTE [ Small
#: LSTMs keep NumPy's step products ])
STEP_MIN_WORK = [1 << 20]
STEP_PACK_MIN_WORK = [1 << 26]

# NOTE [ Small LSTMs keep NumPy's step products ]
# Packing the weight makes a session per layer and loop (0.45-1.2 ms), and an unpacked MLAS
# product costs ~10 us of calls: a tutorial-sized LSTM (2 layers, H=64, batch 4, 16 steps)
# ran its training step at 2.7x PyTorch's time packed, 1.3x on NumPy's BLAS. Measured per
# layer pair forward + backward (one thread, CPU time, ms, NumPy / MLAS / MLAS packed):
# B=4, H=64, T=16 (2**16 multiply-adds a product) 0.96 / 1.15 / 2.06; B=16, H=128, T=32
# (2**20) 9.2 / 7.4 / 8.5; B=8, H=256, T=32 (2**21) 18.1 / 15.7 / 14.9; B=32, H=256, T=64
# (the bench's, 2**23) 93 / 76 / 76. So the products go to MLAS from 2**20 (the medium
# products' rule, NOTE [ Medium products on MLAS ] in ember/_kernels/_mlas.py) and are
# packed from 2**26 multiply-adds over the loop.
#: the most packed weights kept for backwards not run yet
HANDOFF_SIZE = 4

_F32 = np.dtype(np.float32)


class StepProduct:
    """``a @ w`` (or ``a @ w.T``) into a fixed result on MLAS, for a layer loop's per-step
    products: the weight and the result stay bound for the loop, a call binds ``a`` only."""

    __slots__ = ("_io", "_run", "_name", "_keep")

    def __init__(self, io, run, name, keep):
        self._io, self._run, self._name, self._keep = io, run, name, keep

    def __call__(self, a):
        """Computes the product of ``a``, a C-contiguous float32 (B, K) array, into the bound
        result."""
        self._io.bind_cpu_input(self._name, a)
        self._run(self._io)


_MODELS: dict = {}


def _model(shape):
    """The serialized two-node model over a (G, P) float32 weight initializer ``W`` of zeros
    (each session supplies the real one): ``C = Gemm(A, W, transB=1)``, (B, P) -> (B, G), and
    ``D = MatMul(E, W)``, (B, G) -> (B, P). Made once per shape and written as protobuf bytes
    as ``_mlas._model`` writes its own (no ``onnx`` package)."""
    model = _MODELS.get(shape)
    if model is None:
        from .._kernels._mlas import _field

        def value(name):  # a float tensor of any shape
            return _field(1, name) + _field(2, _field(1, _field(1, 1)))

        # TensorProto: dims (1), data_type (2: FLOAT), name (8), raw_data (9)
        weight = (b"".join(_field(1, d) for d in shape) + _field(2, 1) + _field(8, "W")
                  + _field(9, bytes(4 * shape[0] * shape[1])))
        # AttributeProto: name (1), i (3), type (20: INT is 2)
        trans_b = _field(5, _field(1, "transB") + _field(3, 1) + _field(20, 2))
        forward = (_field(1, "A") + _field(1, "W") + _field(2, "C") + _field(4, "Gemm")
                   + trans_b)
        backward = _field(1, "E") + _field(1, "W") + _field(2, "D") + _field(4, "MatMul")
        # GraphProto: node (1), name (2), initializer (5), input (11), output (12)
        graph = (_field(1, forward) + _field(1, backward) + _field(2, "ember_lstm_steps")
                 + _field(5, weight) + _field(11, value("A")) + _field(11, value("E"))
                 + _field(12, value("C")) + _field(12, value("D")))
        model = _MODELS[shape] = (_field(1, 7) + _field(7, graph)
                                  + _field(8, _field(1, "") + _field(2, 13)))
    return model


class RecurrentWeights:
    """A layer's recurrent weight ``w_hh`` (G, P) on MLAS for its steps' products, forward
    ``h @ w_hh.T`` and backward ``d @ w_hh`` (NOTE [ LSTM step products on MLAS ]): packed
    once in a session of its own when ``packed``, else bound to ``_mlas``'s shared sessions
    at each loop."""

    __slots__ = ("packed", "_ort", "_source", "_w", "_threads", "_session", "_value")

    def __init__(self, ort, w_hh, threads, packed):
        w = np.ascontiguousarray(w_hh)
        self.packed = packed
        self._ort, self._source, self._w, self._threads = ort, w_hh, w, threads
        self._session = self._value = None
        if packed:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            value = ort.OrtValue.ortvalue_from_numpy(w)
            opts.add_initializer("W", value)  # in place of the model's zeros
            # the session reads the weight's buffer through ``value``: both live as long as
            # this object
            self._session = ort.InferenceSession(_model(w.shape), opts,
                                                 providers=["CPUExecutionProvider"])
            self._value = value

    def made_from(self, w_hh):
        """Whether these are the weights of the array ``w_hh``."""
        return w_hh is self._source

    def product(self, backward, out):
        """A ``StepProduct`` writing into ``out``: ``a @ w_hh`` ((B, G) -> (B, P)) when
        ``backward``, else ``a @ w_hh.T`` ((B, P) -> (B, G))."""
        w = self._w
        if self._session is None:
            from .._kernels import _mlas

            sess = _mlas._session(self._ort, "gemm", 0, 0 if backward else 1, self._threads)
            io = sess.io_binding()
            io.bind_cpu_input("B", w)
            io.bind_output("C", "cpu", 0, _F32, list(out.shape), out.ctypes.data)
            return StepProduct(io, sess.run_with_iobinding, "A", (w, out))
        sess = self._session
        io = sess.io_binding()
        g, p = w.shape
        # the idle node: an empty product into a result of no elements
        idle_in = np.empty((0, g if not backward else p), _F32)
        spare = np.empty(1, _F32)
        idle, used, name, shape = ("C", "D", "E", [0, g]) if backward else \
            ("D", "C", "A", [0, p])
        io.bind_cpu_input("A" if backward else "E", idle_in)
        io.bind_output(idle, "cpu", 0, _F32, shape, spare.ctypes.data)
        io.bind_output(used, "cpu", 0, _F32, list(out.shape), out.ctypes.data)
        return StepProduct(io, sess.run_with_iobinding, name,
                           (self, idle_in, spare, out))


class _Handoff:
    """Packed recurrent weights a layer's forward leaves for its backward, by the array of
    gate activations the layer saves (NOTE [ LSTM step products on MLAS ]): the newest
    ``size`` kept, each until that array is freed or its backward takes it."""

    def __init__(self, size):
        self.size = size
        self._entries: dict = {}
        # re-entrant: a finalizer (``_drop``) may run on this thread while it holds the lock
        # (a garbage collection inside ``put``)
        self._lock = threading.RLock()

    def put(self, saved, weights):
        key = id(saved)
        ref = weakref.ref(saved)
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (ref, weights)
            while len(self._entries) > self.size:
                del self._entries[next(iter(self._entries))]
        weakref.finalize(saved, self._drop, key, ref)

    def take(self, saved, w_hh):
        """The weights left for the array ``saved`` and made from ``w_hh``, or None."""
        with self._lock:
            entry = self._entries.get(id(saved))
            if entry is None or entry[0]() is not saved or not entry[1].made_from(w_hh):
                return None
            del self._entries[id(saved)]
        return entry[1]

    def _drop(self, key, ref):
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] is ref:
                del self._entries[key]

    def forget(self):
        """In a forked child: drop the parent's sessions without freeing them (their
        destructors would wait on the parent's worker threads, as ``_mlas`` explains)."""
        import ctypes

        for _, weights in self._entries.values():
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(weights))
        self._entries = {}
        self._lock = threading.RLock()


_HANDOFF = _Handoff(HANDOFF_SIZE)

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_HANDOFF.forget)


def steps_on_mlas(batch, gates, inputs):
    """Whether step products of (batch, inputs) by (inputs, gates) may go to MLAS by their
    size (NOTE [ Small LSTMs keep NumPy's step products ])."""
    return STEP_ON_MLAS[0] and batch * gates * inputs >= STEP_MIN_WORK[0]


def recurrent_weights(xp, dt, w_hh, steps, saved=None, threads=None, batch=None):
    """The ``RecurrentWeights`` of ``w_hh`` for a layer loop of ``steps`` steps where MLAS
    is ember's float32 engine (NOTE [ LSTM step products on MLAS ]), else None (the loop's
    own products). ``saved``, in a backward, is the forward's gate activations: the weights
    that forward packed are taken when it left them. ``threads``, when given, is the
    products' thread count (a loop on one core of a wavefront: NOTE [ LSTM layers in a
    wavefront ] in _lstm_wavefront.py). ``batch``, when given, sizes the products: small
    ones stay on NumPy's BLAS, and only long loops of large ones pack (NOTE [ Small LSTMs
    keep NumPy's step products ])."""
    if xp is not np or dt != _F32 or w_hh.dtype != _F32 or not STEP_ON_MLAS[0]:
        return None
    if batch is not None and not steps_on_mlas(batch, *w_hh.shape):
        return None
    work = None if batch is None else batch * w_hh.shape[0] * w_hh.shape[1]
    from .. import _parallel
    from .._kernels import _mlas

    if _mlas.engine() != "mlas":
        return None
    if saved is not None:
        left = _HANDOFF.take(saved, w_hh)
        if left is not None:
            return left
    if threads is None:
        threads = 1 if _parallel.contended() else min(2, _parallel._threads())
    packed = steps >= STEP_PACK_MIN[0] and (work is None or steps * work >= STEP_PACK_MIN_WORK[0])
    return RecurrentWeights(_mlas._state[0], w_hh, threads, packed)


def leave_for_backward(weights, saved):
    """Keep packed ``weights`` for the backward of the forward that saved ``saved`` (its gate
    activations), when one can follow (grad mode on)."""
    if weights is not None and weights.packed and _dispatch.state.grad_enabled:
        _HANDOFF.put(saved, weights)

"""``ember.utils.flop_counter``: count the floating-point operations a piece of code runs.

``FlopCounterMode`` is a dispatch mode (``ember.utils._python_dispatch``): while it is active
it sees every op call, forward and backward, and adds up the flops of the matrix products
and convolutions, per op and per ``nn.Module``, the way PyTorch's counter does so that
model-FLOP-utilisation figures carry over:

- a multiply-add counts two flops: ``mm`` of ``(M, K) @ (K, N)`` is ``2*M*K*N``;
- only products and convolutions count (``mm``, ``addmm``, ``bmm``, ``baddbmm``,
  ``convolution``, ``convolution_backward``); element-wise ops, reductions and attention on
  the CPU count nothing, as in PyTorch;
- ember runs ``nn.Linear`` and ``matmul`` as one op each where PyTorch runs ``addmm``/``mm``/
  ``bmm`` underneath, and a transposed convolution as the input-gradient op of a
  convolution; they are counted and named as the op PyTorch would have run.

NOTE [ Flops per module ]
In the forward pass the module stack comes from global module hooks. In the backward pass
the engine reports the node it is about to run (``_engine.profiler_hook``, chained with a
profiler's); each backward node is attributed to the modules whose forward created it,
found when each module's forward ends by walking back from its outputs over the nodes made
since it began. A module's count includes its children's; "Global" counts everything.
"""

from __future__ import annotations

import logging
import math
import threading
import weakref

from .._core.tensor import Tensor
from ._python_dispatch import TorchDispatchMode
from ._pytree import tensor_leaves
from ._pytree import tree_flatten, tree_map, tree_unflatten  # noqa: F401  (torch's module has them)
from .module_tracker import ModuleTracker  # noqa: F401  (likewise)

__all__ = ["FlopCounterMode", "register_flop_formula", "get_suffix_str",
           "convert_num_with_suffix", "convert_to_percent_str", "mm_flop", "addmm_flop",
           "bmm_flop", "baddbmm_flop", "conv_flop", "conv_flop_count", "conv_backward_flop",
           "sdpa_flop", "sdpa_flop_count", "sdpa_backward_flop", "sdpa_backward_flop_count",
           "flop_registry", "get_shape", "shape_wrapper", "normalize_tuple", "suffixes"]

#: this module's logger (named as PyTorch's, which scripts may configure)
log = logging.getLogger(__name__)


def _shape(x):
    return tuple(x._data.shape) if isinstance(x, Tensor) else tuple(x or ())


# ------------------------------------------------------------------------------------------------
# formulas (shapes in, flops out)


def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """Flops of ``(M, K) @ (K, N)``: ``2*M*K*N``.

    Args:
        a_shape: ``(M, K)``.
        b_shape: ``(K, N)``.

    Returns:
        int.

    Example::

        >>> mm_flop((2, 3), (3, 4))
        48
    """
    m, k = a_shape
    return 2 * m * k * b_shape[-1]


def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Flops of ``bias + a @ b`` (the addition is not counted).

    Args:
        self_shape: the bias's shape (unused).
        a_shape: ``(M, K)``.
        b_shape: ``(K, N)``.

    Returns:
        int.

    Example::

        >>> addmm_flop((4,), (2, 3), (3, 4))
        48
    """
    return mm_flop(a_shape, b_shape)


def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Flops of a batched product ``(B, M, K) @ (B, K, N)``: ``2*B*M*K*N``.

    Args:
        a_shape: ``(B, M, K)``.
        b_shape: ``(B, K, N)``.

    Returns:
        int.

    Example::

        >>> bmm_flop((2, 3, 4), (2, 4, 5))
        240
    """
    b, m, k = a_shape
    return 2 * b * m * k * b_shape[-1]


def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Flops of ``input + a @ b`` batched (the addition is not counted).

    Args:
        self_shape: unused.
        a_shape: ``(B, M, K)``.
        b_shape: ``(B, K, N)``.

    Returns:
        int.

    Example::

        >>> baddbmm_flop((2, 3, 5), (2, 3, 4), (2, 4, 5))
        240
    """
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False) -> int:
    """Flops of a convolution: two per multiply-add, over every output position (every input
    position for a transposed convolution) of every filter tap.

    Args:
        x_shape: input ``(N, C_in, *spatial)``.
        w_shape: weight ``(C_out, C_in / groups, *kernel)`` (``(C_in, C_out / groups,
            *kernel)`` when transposed).
        out_shape: output shape.
        transposed: a transposed convolution.

    Returns:
        int.

    Example::

        >>> conv_flop_count((1, 1, 4, 4), (1, 1, 3, 3), (1, 1, 2, 2))
        72
    """
    positions = math.prod((x_shape if transposed else out_shape)[2:])
    return 2 * x_shape[0] * positions * math.prod(w_shape)


def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs) -> int:
    """Flops of ``convolution(x, w, bias, stride, padding, dilation, transposed, ...)``.

    Args:
        x_shape (tuple): the input's shape ``(N, C_in, *spatial)``.
        w_shape (tuple): the weight's shape.
        _bias, _stride, _padding, _dilation: the op's other arguments (not needed).
        transposed (bool): a transposed convolution.
        *args: the op's remaining arguments (not needed).
        out_shape (tuple): the output's shape. Keyword-only.
        **kwargs: ignored.

    Returns:
        int.

    Example::

        >>> conv_flop((1, 1, 4, 4), (1, 1, 3, 3), None, 1, 0, 1, False, out_shape=(1, 1, 2, 2))
        72
    """
    return conv_flop_count(x_shape, w_shape, out_shape, transposed)


def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding,
                       _dilation, transposed, _output_padding, _groups, output_mask,
                       out_shape=None) -> int:
    """Flops of ``convolution_backward``: the input gradient (a convolution of the output
    gradient with the weight) and the weight gradient (a convolution of the input with the
    output gradient), each where ``output_mask`` asks for it.

    Args:
        grad_out_shape (tuple): the output gradient's shape.
        x_shape (tuple): the input's shape.
        w_shape (tuple): the weight's shape.
        _bias, _stride, _padding, _dilation, _output_padding, _groups: not needed.
        transposed (bool): a transposed convolution.
        output_mask (sequence of 3 bools): which of (input, weight, bias) gradients are computed.
        out_shape: ignored.

    Returns:
        int.

    Example::

        >>> conv_backward_flop((1, 1, 2, 2), (1, 1, 4, 4), (1, 1, 3, 3), None, 1, 0, 1,
        ...                    False, 0, 1, [True, True, False])
        144
    """
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, x_shape, not transposed)
    if output_mask[1]:
        flops += _weight_grad_flops(x_shape, grad_out_shape, w_shape, transposed)
    return flops


def _weight_grad_flops(x_shape, g_shape, w_shape, transposed=False):
    # a convolution of the input (channels as batch) with the output gradient (channels as
    # filters) producing the kernel-sized weight gradient: every kernel tap, at every output
    # position, for every input channel, output channel and example
    if transposed:
        x_shape, g_shape = g_shape, x_shape
    return 2 * math.prod(w_shape[2:]) * math.prod(g_shape[2:]) * x_shape[1] * g_shape[1] * \
        x_shape[0]


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Flops of attention's two products, ``Q K^T`` and ``softmax(.) V``, for shapes
    ``(B, H, L, E)``, ``(B, H, S, E)`` and ``(B, H, S, Ev)``.

    Args:
        query_shape (tuple): ``(B, H, L, E)``.
        key_shape (tuple): ``(B, H, S, E)``.
        value_shape (tuple): ``(B, H, S, Ev)``.

    Returns:
        int.

    Example::

        >>> sdpa_flop_count((2, 4, 16, 8), (2, 4, 16, 8), (2, 4, 16, 8))
        65536
    """
    b, h, lq, e = query_shape
    s = key_shape[-2]
    ev = value_shape[-1]
    return 2 * b * h * lq * s * (e + ev)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Flops of attention's backward: the scores again, then the gradients of ``V``, of the
    probabilities, of ``Q`` and of ``K`` (five products).

    Args:
        grad_out_shape (tuple): ``(B, H, L, Ev)``.
        query_shape (tuple): ``(B, H, L, E)``.
        key_shape (tuple): ``(B, H, S, E)``.
        value_shape (tuple): ``(B, H, S, Ev)``.

    Returns:
        int.

    Example::

        >>> sdpa_backward_flop_count((2, 4, 16, 8), (2, 4, 16, 8), (2, 4, 16, 8), (2, 4, 16, 8))
        163840
    """
    b, h, lq, e = query_shape
    s = key_shape[-2]
    ev = value_shape[-1]
    return 2 * b * h * lq * s * (3 * e + 2 * ev)


def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    """:func:`sdpa_flop_count` with an op's argument list.

    Args:
        query_shape (tuple): ``(B, H, L, E)``.
        key_shape (tuple): ``(B, H, S, E)``.
        value_shape (tuple): ``(B, H, S, Ev)``.
        *args: the op's other arguments (ignored).
        out_shape: ignored. Keyword-only.
        **kwargs: ignored.

    Returns:
        int.

    Example::

        >>> sdpa_flop((1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2))
        32
    """
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs) -> int:
    """:func:`sdpa_backward_flop_count` with an op's argument list.

    Args:
        grad_out_shape (tuple): ``(B, H, L, Ev)``.
        query_shape (tuple): ``(B, H, L, E)``.
        key_shape (tuple): ``(B, H, S, E)``.
        value_shape (tuple): ``(B, H, S, Ev)``.
        *args: the op's other arguments (ignored).
        out_shape: ignored. Keyword-only.
        **kwargs: ignored.

    Returns:
        int.

    Example::

        >>> sdpa_backward_flop((1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2), (1, 1, 2, 2))
        80
    """
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)


def get_shape(x):
    """``x.shape`` for a tensor, ``x`` itself otherwise.

    Args:
        x (Tensor or object): anything.

    Example::

        >>> get_shape(ember.ones(2, 3))
        ember.Size([2, 3])
    """
    return x.shape if isinstance(x, Tensor) else x


def shape_wrapper(f):
    """Decorator: call formula ``f`` with the shapes of its tensor arguments.

    Args:
        f (callable): a flop formula taking shapes and ``out_shape=``.

    Example::

        >>> shape_wrapper(mm_flop)(ember.ones(2, 3), ember.ones(3, 4))
        48
    """
    def wrapped(*args, out_val=None, **kwargs):
        args = [get_shape(a) for a in args]
        kwargs = {k: get_shape(v) for k, v in kwargs.items()}
        return f(*args, out_shape=get_shape(out_val), **kwargs)

    wrapped.__name__ = getattr(f, "__name__", "wrapped")
    return wrapped


def normalize_tuple(x):
    """``x`` as a tuple (a one-element one for a single value).

    Args:
        x (object or tuple or list): a value or a sequence.

    Example::

        >>> normalize_tuple(3)
        (3,)
    """
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def convert_to_percent_str(num, denom) -> str:
    """``num / denom`` as a percentage with two decimals ("0%" for a zero ``denom``).

    Args:
        num (Number): the part.
        denom (Number): the whole.

    Example::

        >>> convert_to_percent_str(3, 7)
        '42.86%'
    """
    if denom == 0:
        return "0%"
    return f"{100 * num / denom:.2f}%"


#: the unit suffixes of flop tables
suffixes = ["", "K", "M", "B", "T"]

#: torch's op name -> formula(*shapes, out_shape=...) (``register_flop_formula`` adds more)
_FORMULAS = {"mm": mm_flop, "addmm": addmm_flop, "bmm": bmm_flop, "baddbmm": baddbmm_flop,
             "convolution": conv_flop, "convolution_backward": conv_backward_flop}
#: the formulas by op name (torch keys its registry by op overloads)
flop_registry = _FORMULAS


def register_flop_formula(targets, get_raw=False):
    """Decorator: count ``targets`` (op overloads, packets or names) with the decorated
    formula, called with the shapes of the op's tensor arguments (other arguments as
    given) and ``out_shape=``.

    Args:
        targets: one op or a list of them.
        get_raw: pass the arguments themselves instead of their shapes.

    Returns:
        A decorator returning the formula.

    Example::

        >>> @register_flop_formula("my_matvec")
        ... def _(a_shape, x_shape, out_shape=None, **kw):
        ...     return 2 * a_shape[0] * a_shape[1]
    """
    if not isinstance(targets, (list, tuple)):
        targets = [targets]

    def deco(fn):
        for t in targets:
            name = t if isinstance(t, str) else getattr(
                getattr(t, "overloadpacket", t), "__name__", str(t))
            name = name.split("::")[-1].split(".")[0]
            _FORMULAS[name] = fn if get_raw else fn
            if get_raw:
                _RAW.add(name)
        return fn

    return deco


_RAW: set = set()


# ------------------------------------------------------------------------------------------------
# ember ops -> (torch's op name, flops)


def _count(name, args, kwargs, out, in_backward):
    """``(torch_name, flops)`` of one ember op call, or None when it counts nothing."""
    sh = [_shape(a) for a in args if isinstance(a, Tensor)]
    if name == "linear":
        x, w = sh[0], sh[1]
        if len(x) < 2 or len(w) != 2:
            return None  # a matrix-vector product: PyTorch counts none
        has_bias = len(args) > 2 and isinstance(args[2], Tensor)
        return ("addmm" if has_bias else "mm"), 2 * math.prod(x[:-1]) * x[-1] * w[0]
    if name == "matmul":
        a, b = sh[0], sh[1]
        if len(a) < 2 or len(b) < 2:
            return None
        if len(b) == 2:  # folded into one (rows, K) @ (K, N) product
            return "mm", 2 * math.prod(a[:-1]) * a[-1] * b[-1]
        batch = math.prod(_shape(out)[:-2]) if isinstance(out, Tensor) else 1
        return "bmm", 2 * batch * a[-2] * a[-1] * b[-1]
    if name == "einsum":
        if len(sh) != 2 or not isinstance(out, Tensor):
            return None
        eq = next((a for a in args if isinstance(a, str)), kwargs.get("equation"))
        sizes = {}
        if isinstance(eq, str) and "->" in eq and "..." not in eq:
            ins = eq.replace(" ", "").split("->")[0].split(",")
            for letters, s in zip(ins, sh):
                sizes.update(zip(letters, s))
            return "bmm", 2 * math.prod(sizes.values())
        return None
    if name == "convolution_weight_grad":
        return "convolution_backward", _weight_grad_flops(sh[0], sh[1], kwargs["weight_shape"])
    if name == "convolution_input_grad":
        # the input gradient of a convolution; outside backward, a transposed convolution
        x, w = sh[0], sh[1]
        flops = 2 * x[0] * math.prod(x[2:]) * math.prod(w)
        return ("convolution_backward" if in_backward else "convolution"), flops
    if name == "convolution":
        x, w = sh[0], sh[1]
        return "convolution", conv_flop_count(x, w, _shape(out))
    f = _FORMULAS.get(name)
    if f is None:
        return None
    if name in _RAW:
        return name, int(f(*args, out_shape=_shape(out), **kwargs))
    shaped = [_shape(a) if isinstance(a, Tensor) else a for a in args]
    return name, int(f(*shaped, out_shape=_shape(out)))


# ------------------------------------------------------------------------------------------------
# the mode


def _packet(name):
    """The key of a per-op count: the ``ember.ops.aten.<name>`` packet, as torch keys its
    counts by ``torch.ops.aten.<name>``."""
    from .. import _dispatch

    return _dispatch.packet("aten", name)


def get_suffix_str(number) -> str:
    """The unit suffix ("", "K", "M", "B", "T") flop tables use for ``number``, chosen by its
    digit count.

    Args:
        number: a non-negative int.

    Returns:
        str.

    Example::

        >>> get_suffix_str(46080000)
        'M'
    """
    suffixes = ["", "K", "M", "B", "T"]
    i = max(0, min(len(suffixes) - 1, (len(str(int(number))) - 2) // 3))
    return suffixes[i]


def convert_num_with_suffix(number, suffix: str) -> str:
    """``number`` in units of ``suffix`` with three decimals.

    Args:
        number: the value.
        suffix: one of "", "K", "M", "B", "T".

    Returns:
        str.

    Example::

        >>> convert_num_with_suffix(46080000, "M")
        '46.080M'
    """
    scale = 1000 ** ["", "K", "M", "B", "T"].index(suffix)
    return f"{number / scale:.3f}{suffix}"


class _Tracked(threading.local):
    node = None


class FlopCounterMode(TorchDispatchMode):
    """Count flops of matrix products and convolutions while active, per op and per module.

    Args:
        mods: accepted for compatibility (every module is tracked; a warning says so).
        depth: module depth the printed table goes to.
        display: print the table on exit.
        custom_mapping: ``{op: formula}`` added for this counter (see
            :func:`register_flop_formula`).

    Example::

        >>> m = ember.nn.Linear(10, 20)
        >>> with FlopCounterMode(display=False) as fc:
        ...     _ = m(ember.randn(4, 10))
        >>> fc.get_total_flops()
        1600
    """

    def __init__(self, mods=None, depth: int = 2, display: bool = True,
                 custom_mapping=None):
        super().__init__()
        if mods is not None:
            import warnings

            warnings.warn("mods argument is not needed anymore, you can stop passing it",
                          stacklevel=2)
        self.depth = depth
        self.display = display
        self.flop_counts: dict = {}
        self._custom = {}
        for k, f in (custom_mapping or {}).items():
            name = k if isinstance(k, str) else getattr(
                getattr(k, "overloadpacket", k), "__name__", str(k))
            self._custom[name.split("::")[-1].split(".")[0]] = f
        self._stack: list = []
        self._names = weakref.WeakKeyDictionary()
        self._starts: dict = {}
        self._node_mods: dict = {}
        self._tracked = _Tracked()
        self._handles = []
        self._prev_hook = None

    # -- module tracking (NOTE [ Flops per module ]) -------------------------------------------

    def _name(self, mod):
        n = self._names.get(mod)
        if n is None:
            n = self._names[mod] = type(mod).__name__
        return n

    def _pre(self, mod, args):
        from ..autograd._base import _sequence

        name = self._name(mod)
        for child_name, child in mod.named_children():
            self._names.setdefault(child, f"{name}.{child_name}")
        self._stack.append(name)
        self._starts[id(mod)] = next(_sequence)

    def _post(self, mod, args, out):
        start = self._starts.pop(id(mod), None)
        mods = tuple(self._stack)
        if self._stack:
            self._stack.pop()
        if start is None:
            return
        todo = [t.grad_fn for t in tensor_leaves(out) if t.grad_fn is not None]
        seen = set()
        while todo:
            node = todo.pop()
            if node is None or id(node) in seen or getattr(node, "_seq", -1) < start:
                continue
            seen.add(id(node))
            self._node_mods.setdefault(node, mods)
            todo.extend(n for n, _ in node.next_functions)

    def _engine_hook(self, node, token, *rest):
        self._tracked.node = node
        prev = self._prev_hook
        return prev(node, token, *rest) if prev is not None else token

    # -- counting -------------------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.overloadpacket.__name__
        node = self._tracked.node
        if name in self._custom:
            shaped = [_shape(a) if isinstance(a, Tensor) else a for a in args]
            counted = name, int(self._custom[name](*shaped, out_shape=_shape(out)))
        else:
            counted = _count(name, args, kwargs, out, node is not None)
        if counted is not None and counted[1]:
            key, flops = counted
            if node is not None:
                mods = self._node_mods.get(node, ())
            else:
                mods = tuple(self._stack)
            for m in ("Global",) + tuple(dict.fromkeys(mods)):
                per = self.flop_counts.setdefault(m, {})
                p = _packet(key)
                per[p] = per.get(p, 0) + flops
        return out

    def __enter__(self):
        from ..autograd import _engine
        from ..nn.modules.module import (
            register_module_forward_hook, register_module_forward_pre_hook,
        )

        self.flop_counts = {"Global": {}}
        self._names = weakref.WeakKeyDictionary()
        self._handles = [register_module_forward_pre_hook(self._pre),
                         register_module_forward_hook(self._post)]
        self._prev_hook = _engine.profiler_hook
        _engine.profiler_hook = self._engine_hook
        return super().__enter__()

    def __exit__(self, *exc):
        from ..autograd import _engine

        r = super().__exit__(*exc)
        for h in self._handles:
            h.remove()
        self._handles = []
        if _engine.profiler_hook == self._engine_hook:
            _engine.profiler_hook = self._prev_hook
        self._tracked.node = None
        if self.display:
            print(self.get_table(self.depth))
        return r

    # -- reports --------------------------------------------------------------------------------

    def get_total_flops(self) -> int:
        """All flops counted.

        Returns:
            int.
        """
        return sum(self.flop_counts.get("Global", {}).values())

    def get_flop_counts(self) -> dict:
        """``{module name: {op packet: flops}}``, with "Global" for everything.

        Returns:
            dict.
        """
        return {m: dict(v) for m, v in self.flop_counts.items()}

    def get_table(self, depth=None) -> str:
        """The counts as a table (module, flops, share of the total) down to ``depth``.

        Args:
            depth: module nesting shown (None: this counter's ``depth``; 999 for all).

        Returns:
            str.
        """
        depth = self.depth if depth is None else depth
        total = self.get_total_flops()
        suffix = get_suffix_str(total)

        def fmt(n):
            return str(int(n)) if suffix == "" else convert_num_with_suffix(n, suffix)

        def pct(n):
            return f"{(100.0 * n / total if total else 0.0):.2f}%"

        rows = []
        glob = self.flop_counts.get("Global", {})
        # "Global" is shown unless one module accounts for all of it
        if not any(self.flop_counts[m] == glob for m in self.flop_counts if m != "Global"):
            rows += self._rows("Global", glob, fmt, pct)
        for m in sorted(self.flop_counts):
            if m == "Global" or m.count(".") + 1 > depth:
                continue
            rows += self._rows(m, self.flop_counts[m], fmt, pct)
        header = ("Module", "FLOP", "% Total")
        # a column is as wide as its widest cell, and two wider than its header
        widths = [max([len(header[i]) + 2] + [len(r[i]) for r in rows]) for i in range(3)]

        def line(r):
            return "  ".join([r[0].ljust(widths[0]), r[1].rjust(widths[1]),
                              r[2].rjust(widths[2])]).rstrip()

        out = [line(header), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in rows]
        return "\n".join(out)

    @staticmethod
    def _rows(name, counts, fmt, pct):
        rows = [(name, fmt(sum(counts.values())), pct(sum(counts.values())))]
        for k, v in counts.items():
            rows.append((f"- {k}", fmt(v), pct(v)))
        return rows



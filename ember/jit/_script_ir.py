"""A small TorchScript front end: what ``jit.script`` prints as ``.code`` and ``.graph``.

NOTE [ Script IR ]
ember runs scripted code eagerly (NOTE [ Eager TorchScript ] in ember/jit/__init__.py), but
programs and tutorials print ``scripted.code`` and ``scripted.graph``, and those texts are
what PyTorch's compiler makes of the source. This module lowers a function's Python source
into the same kind of graph TorchScript builds -- SSA values, ``prim::If`` and
``prim::Loop`` nodes with blocks, loop-carried values, ``prim::GetAttr`` /
``prim::CallMethod`` for submodules -- and prints it two ways:

- ``graph_text``: TorchScript's IR syntax. The structure, the kinds, the types and the
  source places are PyTorch's; the value numbers are ember's own (PyTorch's come from its
  compiler's internal counters), so the text matches in form, not character for character.
- ``code_text``: TorchScript's Python-like code, as its printer writes it. A value is
  written inside its user when it is used once, has no variable name (or goes straight to a
  block's end), and is the value computed right before that user (so the evaluation order
  is unchanged); constants are always written in place. A written-in-place argument of 40
  characters or more is first given a name ``_0``, ``_1``... together with the arguments
  before it. Names are handed out in printing order: a variable assigned again gets ``x0``,
  ``x1``..., nameless values ``_0``, ``_1``... A condition that is a Tensor is wrapped in
  ``bool(...)``; ``if ...: return a else: return b`` becomes one result variable; a loop's
  carried variables are copied to fresh names before it and assigned together at the end of
  each trip -- all as PyTorch prints them, so for the programs this front end understands,
  ``.code`` is PyTorch's text exactly.

What it does not understand (slices, comprehensions, ``with``, calls of a module's own
helper methods...) raises ``Unsupported``; callers then fall back (see
``ScriptFunction.code`` and ``_CompiledForm``).
"""

from __future__ import annotations

import ast

from . import _types as T

__all__ = ["Unsupported", "compile_function"]


class Unsupported(Exception):
    """A construct this front end does not lower (NOTE [ Script IR ])."""


_TENSOR = T.TensorType.get()
_INT, _FLOAT, _BOOL = T.IntType.get(), T.FloatType.get(), T.BoolType.get()
_NONE = T.NoneType.get()
_NUMBERS = ("IntType", "FloatType", "BoolType")

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
           ast.MatMult: "matmul", ast.Pow: "pow", ast.Mod: "remainder",
           ast.FloorDiv: "floordiv", ast.BitAnd: "__and__", ast.BitOr: "__or__",
           ast.BitXor: "__xor__"}
_CMPOPS = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq",
           ast.NotEq: "ne"}
# tensor methods and functions whose sizes may be given one by one: TorchScript takes a list
_SIZE_VARARGS = frozenset({"zeros", "ones", "empty", "rand", "randn", "view", "reshape",
                           "expand", "permute", "repeat", "tile", "new_zeros", "new_ones",
                           "new_empty"})
# ``nn.functional`` names that are operators in PyTorch (``torch.linear``), not Python
# functions TorchScript compiles and calls (``__torch__.torch.nn.functional.relu``)
_FUNCTIONAL_BUILTINS = frozenset({
    "adaptive_avg_pool1d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "bilinear", "celu_",
    "channel_shuffle", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "cosine_similarity", "elu_", "gelu",
    "hardshrink", "hardtanh_", "leaky_relu_", "linear", "logsigmoid",
    "native_channel_shuffle", "one_hot", "pairwise_distance", "pdist", "pixel_shuffle",
    "pixel_unshuffle", "prelu", "relu_", "rrelu_", "scaled_dot_product_attention", "selu_",
    "softplus", "softshrink", "threshold_"})
# results that are not tensors
_INT_RESULTS = frozenset({"dim", "numel", "size", "len", "element_size", "ndimension"})
_BOOL_RESULTS = frozenset({"is_floating_point", "is_complex", "is_contiguous", "equal",
                           "allclose", "is_nonzero"})
# keyword arguments TorchScript turns into a list of ints
_DIM_LISTS = {("mean", "dim"), ("sum", "dim"), ("amax", "dim"), ("amin", "dim"),
              ("std", "dim"), ("var", "dim"), ("norm", "dim")}


# -- the graph ---------------------------------------------------------------------------------

class Value:
    """One SSA value: a graph or block input, or a node's output."""

    __slots__ = ("name", "type", "node", "uses", "const", "number")

    def __init__(self, type_, name=None, node=None, const=None):
        self.type, self.name, self.node = type_, name, node
        self.uses: list = []   # (node, index) pairs; a block's return is a node too
        self.const = const
        self.number = None


_NO_CONST = object()


class Node:
    """``outputs = kind[attr](inputs)`` with nested ``blocks`` (If, Loop)."""

    __slots__ = ("kind", "inputs", "outputs", "blocks", "attr", "where", "block")

    def __init__(self, kind, inputs, out_types=(), attr=None, where=None, names=()):
        self.kind, self.attr, self.where, self.blocks = kind, attr, where, []
        self.inputs = list(inputs)
        for i, v in enumerate(self.inputs):
            v.uses.append((self, i))
        names = list(names) + [None] * (len(out_types) - len(names))
        self.outputs = [Value(t, n, self) for t, n in zip(out_types, names, strict=True)]
        self.block = None

    @property
    def output(self):
        return self.outputs[0]


class Block:
    """A list of nodes with inputs and a return node (``-> (...)`` in the IR)."""

    def __init__(self):
        self.inputs: list[Value] = []
        self.nodes: list[Node] = []
        self.ret = Node("prim::Return", [])
        self.ret.block = self

    def set_returns(self, values):
        self.ret = Node("prim::Return", values)
        self.ret.block = self

    def append(self, node):
        node.block = self
        self.nodes.append(node)
        return node


class Graph:
    """A lowered function: ``self`` (for a method), its arguments and its body."""

    def __init__(self):
        self.block = Block()
        self.return_type = None
        self.signature = ""


# -- lowering ------------------------------------------------------------------------------

class _Lowering:
    """Python source to a ``Graph`` (NOTE [ Script IR ])."""

    def __init__(self, filename, line0, col0, module=None, globals_=None):
        self.filename, self.line0, self.col0 = filename, line0, col0
        self.globals = globals_ or {}
        self.module = module
        self.block: Block = None
        self.env: dict = {}
        self.consts: dict = {}

    # -- helpers
    def where(self, node):
        if node is None or not hasattr(node, "lineno"):
            return None
        return (self.filename, node.lineno + self.line0 - 1, node.col_offset + self.col0)

    def emit(self, kind, inputs, out_types=(), attr=None, where=None, names=()):
        return self.block.append(Node(kind, inputs, out_types, attr, where, names))

    def const(self, value, src=None):
        if value is None:
            t = _NONE
        elif isinstance(value, bool):
            t = _BOOL
        elif isinstance(value, int):
            t = _INT
        elif isinstance(value, float):
            t = _FLOAT
        elif isinstance(value, str):
            t = T.StringType.get()
        else:
            raise Unsupported(f"constant {value!r}")
        node = Node("prim::Constant", [], [t], attr=value, where=self.where(src))
        node.output.const = value
        node.block = self.block
        self.block.nodes.append(node)
        return node.output

    def aten(self, name, args, src, out_type=None):
        if out_type is None:
            out_type = _result_type(name, args)
        folded = _fold(name, args)
        if folded is not _NO_CONST:  # numbers only: TorchScript's constant propagation
            return self.const(folded, src)
        return self.emit("aten::" + name, args, [out_type], where=self.where(src)).output

    # -- statements
    def body(self, stmts):
        """Lower statements; returns the returned Value when every path returns."""
        stmts = _fold_early_returns(list(stmts))
        for stmt in stmts:
            result = self.stmt(stmt)
            if result is not None:
                return result
        return None

    def stmt(self, s):
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return None  # a docstring
            self.expr(s.value)
            return None
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise Unsupported("chained assignment")
            self.assign(s.targets[0], s.value)
            return None
        if isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, s.value)
            return None
        if isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise Unsupported("augmented assignment to a non-name")
            value = ast.BinOp(left=ast.Name(s.target.id, ast.Load()), op=s.op, right=s.value)
            ast.copy_location(value, s)
            value.left.lineno, value.left.col_offset = s.lineno, s.col_offset
            self.assign(s.target, value)
            return None
        if isinstance(s, ast.Return):
            return self.const(None) if s.value is None else self.expr(s.value)
        if isinstance(s, ast.If):
            return self.if_stmt(s)
        if isinstance(s, ast.For):
            self.for_stmt(s)
            return None
        if isinstance(s, ast.While):
            self.while_stmt(s)
            return None
        if isinstance(s, ast.Pass):
            return None
        raise Unsupported(type(s).__name__)

    def assign(self, target, value_node):
        if isinstance(target, ast.Name):
            v = self.expr(value_node, name=target.id)
            self.bind(target.id, v)
            return
        if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
            names = [e.id for e in target.elts]
            if isinstance(value_node, ast.Tuple) and len(value_node.elts) == len(names):
                values = [self.expr(e, name=n) for e, n in zip(value_node.elts, names,
                                                                strict=True)]
            else:
                tup = self.expr(value_node)
                if tup.type.kind() != "TupleType" or len(tup.type.elements()) != len(names):
                    raise Unsupported("unpacking a value that is not a tuple of that size")
                values = self.emit("prim::TupleUnpack", [tup], list(tup.type.elements()),
                                   names=names).outputs
            for n, v in zip(names, values, strict=True):
                self.bind(n, v)
            return
        raise Unsupported("assignment target")

    def bind(self, name, v):
        if v.name is None and v.node is not None and v.node.kind != "prim::Constant":
            v.name = name
        elif v.name != name:  # a value of another variable: TorchScript keeps one value
            pass
        self.env[name] = v

    def sub_body(self, stmts, env, block):
        saved = self.block, self.env
        self.block, self.env = block, dict(env)
        try:
            ret = self.body(stmts)
            return ret, self.env
        finally:
            self.block, self.env = saved

    def condition(self, test):
        refined = _is_none_test(test)
        v = self.expr(test)
        if v.type.kind() == "TensorType":
            v = self.emit("aten::Bool", [v], [_BOOL], where=self.where(test)).output
        elif v.type.kind() != "BoolType":
            raise Unsupported("a condition that is neither a bool nor a Tensor")
        return v, refined

    def if_stmt(self, s):
        cond, refined = self.condition(s.test)
        node = Node("prim::If", [cond], [], where=self.where(s))
        node.block = self.block
        branches = []
        for stmts, is_true in ((s.body, True), (s.orelse, False)):
            block = Block()
            env = dict(self.env)
            saved = self.block
            self.block = block
            if refined is not None and (refined[1] == is_true):
                opt = env.get(refined[0])
                if opt is not None and opt.type.kind() == "OptionalType":
                    cast = self.emit("prim::unchecked_cast", [opt], [opt.type.getElementType()],
                                     names=[refined[0]])
                    env[refined[0]] = cast.output
            self.block = saved
            ret, env = self.sub_body(stmts, env, block)
            branches.append((block, ret, env))
        (tb, tret, tenv), (fb, fret, fenv) = branches
        if (tret is None) != (fret is None):
            raise Unsupported("a return in one branch only")
        if tret is not None:
            t = _unify(tret.type, fret.type)
            tb.set_returns([tret])
            fb.set_returns([fret])
            node.blocks = [tb, fb]
            node.outputs = [Value(t, None, node)]
            self.block.nodes.append(node)
            return node.output
        names = [n for n in _assigned(s.body) + _assigned(s.orelse)
                 if n in tenv and n in fenv and (tenv[n] is not self.env.get(n)
                                                 or fenv[n] is not self.env.get(n))]
        names = list(dict.fromkeys(names))
        outs = []
        for n in names:
            t = _unify(tenv[n].type, fenv[n].type)
            outs.append(Value(t, n, node))
        tb.set_returns([tenv[n] for n in names])
        fb.set_returns([fenv[n] for n in names])
        node.blocks = [tb, fb]
        node.outputs = outs
        self.block.nodes.append(node)
        for n, v in zip(names, outs, strict=True):
            self.env[n] = v
        return None

    def _loop(self, s, trip, cond, target, body_stmts, while_test=None):
        carried = [n for n in dict.fromkeys(_assigned(body_stmts)) if n in self.env]
        if while_test is not None:
            carried = [n for n in carried]
        node = Node("prim::Loop", [trip, cond] + [self.env[n] for n in carried], [],
                    where=self.where(s))
        node.block = self.block
        block = Block()
        counter = Value(_INT, target, None)
        block.inputs = [counter] + [Value(self.env[n].type, n, None) for n in carried]
        env = dict(self.env)
        env.update({n: v for n, v in zip(carried, block.inputs[1:], strict=True)})
        if target is not None:
            env[target] = counter
        ret, env = self.sub_body(body_stmts, env, block)
        if ret is not None:
            raise Unsupported("return inside a loop")
        # a variable the body leaves as it found it is not carried (TorchScript drops it)
        for n, inp in list(zip(carried, block.inputs[1:], strict=True)):
            if env[n] is inp:
                _replace_uses(inp, self.env[n])
                env[n] = self.env[n]
                block.inputs.remove(inp)
                carried.remove(n)
                node.inputs.remove(self.env[n])
                self.env[n].uses.remove(next(u for u in self.env[n].uses if u[0] is node))
        node.inputs[2:] = [self.env[n] for n in carried]
        for v in node.inputs:  # (positions of the remaining inputs)
            v.uses[:] = [u for u in v.uses if u[0] is not node]
        for i, v in enumerate(node.inputs):
            v.uses.append((node, i))
        saved = self.block, self.env
        self.block, self.env = block, env
        try:
            next_cond = (self.condition(while_test)[0] if while_test is not None
                         else cond)
        finally:
            self.block, self.env = saved
        block.set_returns([next_cond] + [env[n] for n in carried])
        node.blocks = [block]
        node.outputs = [Value(env[n].type, n, node) for n in carried]
        self.block.nodes.append(node)
        for n, v in zip(carried, node.outputs, strict=True):
            self.env[n] = v

    def _container(self, it):
        """``(value, module)`` when ``it`` is a module container a loop can run over:
        ``self`` (a Sequential's own forward), ``self._modules.values()``, ``self.layers``
        (a ModuleList, Sequential or ModuleDict's ``.values()``); None otherwise."""
        if isinstance(it, ast.Call) and not it.args and isinstance(it.func, ast.Attribute) \
                and it.func.attr == "values":
            it = it.func.value
            if isinstance(it, ast.Attribute) and it.attr == "_modules":
                it = it.value
        if isinstance(it, ast.Name | ast.Attribute):
            try:
                v = self.expr(it)
            except Unsupported:
                return None
            module = self.module if v is self.env.get("self") else v.const
            if module is not None and hasattr(module, "_modules") and (
                    v is not self.env.get("self") or
                    isinstance(it, ast.Name) and it.id == "self"):
                return v, module
            if module is not None and hasattr(module, "_modules") and \
                    v is self.env.get("self"):
                return v, module
        return None

    def for_stmt(self, s):
        it = s.iter
        container = self._container(it) if isinstance(s.target, ast.Name) else None
        if container is not None and not s.orelse:
            # a loop over submodules is unrolled: TorchScript knows them when compiling
            base, module = container
            children = [(k, m) for k, m in module._modules.items() if m is not None]
            values = [self.get_attr(base, module, k) for k, _ in children]
            for v in values:
                self.env[s.target.id] = v
                if self.body(s.body) is not None:
                    raise Unsupported("return inside a loop")
            return
        if (s.orelse or not isinstance(s.target, ast.Name) or not isinstance(it, ast.Call)
                or not isinstance(it.func, ast.Name) or it.func.id != "range"
                or len(it.args) != 1 or it.keywords):
            raise Unsupported("a for loop other than over range(n)")
        trip = self.expr(it.args[0])
        if trip.type.kind() != "IntType":
            raise Unsupported("range over a non-int")
        cond = self.const(True, s)
        self._loop(s, trip, cond, s.target.id, s.body)

    def while_stmt(self, s):
        if s.orelse:
            raise Unsupported("while ... else")
        trip = self.const(9223372036854775807, s)
        cond, _ = self.condition(s.test)
        self._loop(s, trip, cond, None, s.body, while_test=s.test)

    # -- expressions
    def expr(self, e, name=None):
        if isinstance(e, ast.Constant):
            return self.const(e.value, e)
        if isinstance(e, ast.Name):
            if e.id in self.env:
                return self.env[e.id]
            if e.id in ("True", "False", "None"):
                return self.const({"True": True, "False": False, "None": None}[e.id], e)
            raise Unsupported(f"the global name {e.id}")
        if isinstance(e, ast.UnaryOp):
            if isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) and \
                    isinstance(e.operand.value, int | float) and \
                    not isinstance(e.operand.value, bool):
                return self.const(-e.operand.value, e)
            if isinstance(e.op, ast.USub):
                return self.aten("neg", [self.expr(e.operand)], e)
            if isinstance(e.op, ast.Not):
                v, _ = self.condition(e.operand)
                return self.aten("__not__", [v], e, _BOOL)
            if isinstance(e.op, ast.Invert):
                return self.aten("bitwise_not", [self.expr(e.operand)], e)
            raise Unsupported("unary +")
        if isinstance(e, ast.BinOp):
            op = _BINOPS.get(type(e.op))
            if op is None:
                raise Unsupported(type(e.op).__name__)
            a, b = self.expr(e.left), self.expr(e.right)
            if a.type.kind() in _NUMBERS and b.type.kind() == "TensorType":
                raise Unsupported("a number on the left of a tensor operator")
            if op == "floordiv":
                op = "floor_divide" if a.type.kind() == "TensorType" else "floordiv"
            return self.aten(op, [a, b], e)
        if isinstance(e, ast.Compare):
            if len(e.ops) != 1:
                raise Unsupported("chained comparison")
            op = e.ops[0]
            a, b = self.expr(e.left), self.expr(e.comparators[0])
            if isinstance(op, ast.Is | ast.IsNot):
                return self.aten("__is__" if isinstance(op, ast.Is) else "__isnot__",
                                 [a, b], e, _BOOL)
            name_ = _CMPOPS.get(type(op))
            if name_ is None:
                raise Unsupported(type(op).__name__)
            return self.aten(name_, [a, b], e)
        if isinstance(e, ast.BoolOp):
            return self.bool_op(e)
        if isinstance(e, ast.Tuple):
            values = [self.expr(x) for x in e.elts]
            return self.emit("prim::TupleConstruct", values,
                             [T.TupleType([v.type for v in values])]).output
        if isinstance(e, ast.List):
            values = [self.expr(x) for x in e.elts]
            if not values:
                raise Unsupported("an empty list literal")
            return self.emit("prim::ListConstruct", values,
                             [T.ListType(values[0].type)]).output
        if isinstance(e, ast.Subscript):
            return self.subscript(e)
        if isinstance(e, ast.Attribute):
            return self.attribute(e, name)
        if isinstance(e, ast.Call):
            return self.call(e)
        raise Unsupported(type(e).__name__)

    def bool_op(self, e):
        # ``a and b`` is ``b if a else False``; ``a or b`` is ``True if a else b``
        first, _ = self.condition(e.values[0])
        if len(e.values) > 2:
            rest = ast.BoolOp(op=e.op, values=e.values[1:])
            ast.copy_location(rest, e.values[1])
        else:
            rest = e.values[1]
        node = Node("prim::If", [first], [], where=self.where(e))
        node.block = self.block
        blocks = []
        for evaluate in (isinstance(e.op, ast.And), not isinstance(e.op, ast.And)):
            block = Block()
            saved = self.block
            self.block = block
            try:
                v = self.condition(rest)[0] if evaluate else \
                    self.const(isinstance(e.op, ast.Or), e)
            finally:
                self.block = saved
            block.set_returns([v])
            blocks.append(block)
        node.blocks = blocks
        node.outputs = [Value(_BOOL, None, node)]
        self.block.nodes.append(node)
        return node.output

    def subscript(self, e):
        base = self.expr(e.value)
        index = e.slice
        if hasattr(base.const, "_modules") and isinstance(index, ast.Constant):
            keys = [k for k, m in base.const._modules.items() if m is not None]
            key = index.value
            if isinstance(key, int) and not isinstance(key, bool) and -len(keys) <= key < \
                    len(keys):
                return self.get_attr(base, base.const, keys[key])
            if isinstance(key, str) and key in keys:
                return self.get_attr(base, base.const, key)
            raise Unsupported("this index of a module container")
        if base.type.kind() == "TensorType":
            items = index.elts if isinstance(index, ast.Tuple) else [index]
            if any(isinstance(i, ast.Slice) for i in items):
                raise Unsupported("slicing")
            v = base
            for k, item in enumerate(items):  # each index selects along dim 0 of what is left
                dim = self.const(0, None)
                del k
                v = self.aten("select", [v, dim, self.expr(item)], e, _TENSOR)
            return v
        if base.type.kind() == "TupleType" and isinstance(index, ast.Constant) and \
                isinstance(index.value, int) and base.node is not None and \
                base.node.kind == "prim::TupleConstruct":
            return base.node.inputs[index.value]  # known when compiling
        if base.type.kind() == "ListType":
            return self.aten("__getitem__", [base, self.expr(index)], e,
                             base.type.getElementType())
        raise Unsupported("indexing this value")

    def attribute(self, e, name=None):
        if isinstance(e.value, ast.Name) and e.value.id == "self" and "self" in self.env:
            return self.self_attribute(e.attr, e)
        base = self.expr(e.value)
        if base.type.kind() == "TensorType" and e.attr == "shape":
            return self.aten("size", [base], e, T.ListType(_INT))
        if base.type.kind() == "TensorType" and e.attr in ("T", "mT"):
            return self.aten("numpy_T" if e.attr == "T" else "mT", [base], e, _TENSOR)
        raise Unsupported(f"the attribute {e.attr}")

    def get_attr(self, base, module, attr):
        """``base.attr`` for the submodule ``attr`` of ``module`` (``base``'s object)."""
        child = module._modules[attr]
        t = T._NamedType(_qualified(child))
        name = attr if attr.isidentifier() else f"_{attr}"
        v = self.emit("prim::GetAttr", [base], [t], attr=attr, names=[name]).output
        v.const = child
        return v

    def self_attribute(self, attr, src):
        from .._core.tensor import Tensor

        module = self.module
        modules = module.__dict__.get("_modules", {})
        if attr in modules and modules[attr] is not None:
            return self.get_attr(self.env["self"], module, attr)
        try:
            value = getattr(module, attr)
        except AttributeError as err:
            raise Unsupported(f"the attribute self.{attr}") from err
        if isinstance(value, Tensor):
            t = _TENSOR
        elif isinstance(value, bool):
            t = _BOOL
        elif isinstance(value, int):
            t = _INT
        elif isinstance(value, float):
            t = _FLOAT
        else:
            raise Unsupported(f"the attribute self.{attr}")
        return self.emit("prim::GetAttr", [self.env["self"]], [t], attr=attr,
                         names=[attr]).output

    def call(self, e):
        f = e.func
        if any(isinstance(a, ast.Starred) for a in e.args) or any(
                k.arg is None for k in e.keywords):
            raise Unsupported("*args or **kwargs in a call")
        # a submodule: self.sub(...)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id == "self" and "self" in self.env:
            modules = self.module.__dict__.get("_modules", {})
            if f.attr not in modules or modules[f.attr] is None:
                raise Unsupported(f"calling self.{f.attr}")
            return self.call_module(self.self_attribute(f.attr, f), e)
        # a function of a namespace: torch.tanh(x), F.relu(x)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.value.id not in self.env:
            namespace = getattr(self.globals.get(f.value.id), "__name__", None)
            if namespace in ("ember.nn.functional", "torch.nn.functional"):
                if f.attr in _FUNCTIONAL_BUILTINS:  # an operator in PyTorch, not Python
                    return self.op(f.attr, e.args, e.keywords, e)
                return self.python_function(f.attr, e)
            if namespace not in ("ember", "torch"):
                raise Unsupported(f"calling {f.value.id}.{f.attr}")
            return self.op(f.attr, e.args, e.keywords, e)
        # a method: x.sum()
        if isinstance(f, ast.Attribute):
            base = self.expr(f.value)
            if base.type.kind() != "TensorType":
                raise Unsupported(f"the method {f.attr} of a {base.type}")
            return self.op(f.attr, e.args, e.keywords, e, first=base)
        if isinstance(f, ast.Name) and f.id in self.env and \
                hasattr(self.env[f.id].const, "_modules"):
            obj = self.env[f.id]
            return self.call_module(obj, e)
        if isinstance(f, ast.Subscript):
            obj = self.expr(f)
            if hasattr(obj.const, "_modules"):
                return self.call_module(obj, e)
        if isinstance(f, ast.Name) and f.id in ("int", "float", "bool", "len") and \
                len(e.args) == 1 and not e.keywords:
            v = self.expr(e.args[0])
            if f.id == "len":
                return self.aten("len", [v], e, _INT)
            kind = {"int": "Int", "float": "Float", "bool": "Bool"}[f.id]
            out = {"int": _INT, "float": _FLOAT, "bool": _BOOL}[f.id]
            if v.type == out:
                return v
            return self.emit(f"aten::{kind}", [v], [out], where=self.where(e)).output
        raise Unsupported("this call")

    def call_module(self, obj, e):
        """``obj(*args)`` for a submodule value: a ``prim::CallMethod`` of its forward."""
        if e.keywords:
            raise Unsupported("keyword arguments to a submodule")
        args = [self.expr(a) for a in e.args]
        ret = _forward_return_type(obj.const)
        return self.emit("prim::CallMethod", [obj, *args], [ret], attr="forward",
                         where=self.where(e)).output

    def python_function(self, name, e):
        """A call of an ``nn.functional`` function: TorchScript compiles the function
        itself and calls it with every argument spelled out (``prim::CallFunction``)."""
        import inspect

        from .. import nn

        fn = getattr(nn.functional, name, None)
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError) as err:
            raise Unsupported(f"F.{name}") from err
        given = {p.name: a for p, a in zip(params, e.args, strict=False)}
        for k in e.keywords:
            given[k.arg] = k.value
        args = []
        for p in params:
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                raise Unsupported(f"F.{name}")
            if p.name in given:
                args.append(self.expr(given[p.name]))
            elif p.default is not inspect.Parameter.empty:
                args.append(self.const(p.default))
            else:
                raise Unsupported(f"F.{name} without {p.name}")
        fn_value = self.emit("prim::Constant", [], [T._NamedType("Function")], attr=name)
        fn_value.output.const = _Function(name)
        return self.emit("prim::CallFunction", [fn_value.output, *args], [_TENSOR],
                         where=self.where(e)).output

    def op(self, name, arg_nodes, keywords, src, first=None):
        args = [] if first is None else [first]
        if name in _SIZE_VARARGS and len(arg_nodes) > 1 and all(
                not isinstance(a, ast.List | ast.Tuple) for a in arg_nodes):
            sizes = [self.expr(a) for a in arg_nodes]
            if any(v.type.kind() != "IntType" for v in sizes):
                raise Unsupported("sizes that are not ints")
            args.append(self.emit("prim::ListConstruct", sizes, [T.ListType(_INT)]).output)
        else:
            args += [self.expr(a) for a in arg_nodes]
        if keywords:
            if [k.arg for k in keywords] != ["dim"] or (name, "dim") not in _DIM_LISTS:
                raise Unsupported("keyword arguments")
            dim = self.expr(keywords[0].value)
            if dim.type.kind() == "IntType":
                dim = self.emit("prim::ListConstruct", [dim], [T.ListType(_INT)]).output
            args.append(dim)
        if name == "size" and len(args) == 1:
            return self.aten("size", args, src, T.ListType(_INT))
        return self.aten(name, args, src)


_FOLDABLE = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
             "mul": lambda a, b: a * b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
             "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "eq": lambda a, b: a == b,
             "ne": lambda a, b: a != b, "neg": lambda a: -a}


def _fold(name, args):
    """The value of ``name(*args)`` when every argument is a constant number and the
    operation is simple arithmetic or a comparison; ``_NO_CONST`` otherwise."""
    fn = _FOLDABLE.get(name)
    if fn is None or not all(
            a.node is not None and a.node.kind == "prim::Constant" and
            isinstance(a.const, int | float) for a in args):
        return _NO_CONST
    return fn(*[a.const for a in args])


def _dead_code(block) -> None:
    """Drop nodes whose results are never used and that change nothing (TorchScript's dead
    code elimination); calls of submodules and in-place operations stay."""
    for node in reversed(list(block.nodes)):
        for b in node.blocks:
            _dead_code(b)
        pure = node.kind != "prim::CallMethod" and not node.blocks and \
            not node.kind.endswith("_")
        if pure and all(not o.uses for o in node.outputs):
            block.nodes.remove(node)
            for i, v in enumerate(node.inputs):
                v.uses.remove((node, i))


class _Function:
    """A compiled Python function as a constant of the graph (``prim::Constant[name=...]``)."""

    def __init__(self, name):
        self.name = name


def _replace_uses(old, new) -> None:
    """Make every user of ``old`` use ``new`` instead."""
    for user, i in old.uses:
        user.inputs[i] = new
        new.uses.append((user, i))
    old.uses = []


def _result_type(name, args):
    kinds = [a.type.kind() for a in args]
    if name in _INT_RESULTS:
        return _INT
    if name in _BOOL_RESULTS or name in ("__is__", "__isnot__"):
        return _BOOL
    if name == "item":
        return T.NumberType.get()
    if "TensorType" in kinds or not kinds:
        return _TENSOR
    if all(k in _NUMBERS for k in kinds):
        if name in _CMPOPS.values():
            return _BOOL
        if name == "div" or "FloatType" in kinds:
            return _FLOAT
        return _INT
    return _TENSOR


def _unify(a, b):
    if a == b:
        return a
    if a.kind() == "NoneType":
        return T.OptionalType(b)
    if b.kind() == "NoneType":
        return T.OptionalType(a)
    raise Unsupported(f"branches of types {a} and {b}")


def _assigned(stmts) -> list:
    """Names assigned by the statements, in order of first assignment."""
    out = []
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.append(n.id)
    return out


def _is_none_test(test):
    """``(name, refined_in_true_branch)`` for ``x is None`` / ``x is not None``."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(
            test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant) and \
            test.comparators[0].value is None:
        if isinstance(test.ops[0], ast.IsNot):
            return (test.left.id, True)
        if isinstance(test.ops[0], ast.Is):
            return (test.left.id, False)
    return None


def _returns(stmts) -> bool:
    """Whether every path through the statements ends in ``return``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _returns(last.body) and _returns(last.orelse)
    return False


def _fold_early_returns(stmts):
    """``if c: return a`` followed by more statements: the rest becomes the ``else``, so
    that every ``if`` either returns in both branches or in neither (TorchScript's exit
    transform does the same)."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.If) and i + 1 < len(stmts):
            t, f = _returns(s.body), _returns(s.orelse)
            if t and not f:
                new = ast.If(test=s.test, body=s.body, orelse=list(s.orelse) + stmts[i + 1:])
                return stmts[:i] + [ast.copy_location(new, s)]
            if f and not t:
                new = ast.If(test=s.test, body=list(s.body) + stmts[i + 1:], orelse=s.orelse)
                return stmts[:i] + [ast.copy_location(new, s)]
    return stmts


def _qualified(module) -> str:
    from ._trace_graph import _qualified as q

    return q(module)


def _forward_return_type(module):
    """The type a submodule's ``forward`` returns, as TorchScript would know it."""
    graph = module.__dict__.get("_ember_trace_graph")
    if graph is not None:
        n = len(graph.outputs)
        if n == 1 and graph.result_shape is None:
            return _TENSOR
        if graph.result_shape == "list":
            return T.ListType(_TENSOR)
        return T.TupleType([_TENSOR] * n)
    try:
        return compile_module_forward(module).return_type
    except Unsupported:
        return _TENSOR


# -- entry points --------------------------------------------------------------------------

def _source_of(fn):
    import inspect
    import textwrap

    try:
        lines, start = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as err:
        raise Unsupported("no source") from err
    raw = "".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip())
    tree = ast.parse(textwrap.dedent(raw))
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise Unsupported("not a def")
    return fdef, filename, start, indent


def _lower(fn, params, types, ret_annotation, module=None, method=False):
    fdef, filename, start, indent = _source_of(fn)
    names = dict(getattr(fn, "__globals__", None) or {})
    if getattr(fn, "__closure__", None):  # a function or class defined inside a function
        import inspect

        names.update(inspect.getclosurevars(fn).nonlocals)
    low = _Lowering(filename, start, indent, module, names)
    graph = Graph()
    low.block = graph.block
    if method:
        selfv = Value(T._NamedType(_qualified(module)), "self")
        graph.block.inputs.append(selfv)
        low.env["self"] = selfv
    for p, t in zip(params, types, strict=True):
        v = Value(t, p)
        graph.block.inputs.append(v)
        low.env[p] = v
    ret = low.body(fdef.body)
    if ret is None:
        ret = low.const(None)
    if ret_annotation is not None and ret.type != ret_annotation and \
            ret_annotation.kind() != "OptionalType":
        raise Unsupported("a result of another type than the annotation")
    graph.block.set_returns([ret])
    _dead_code(graph.block)
    graph.return_type = ret_annotation or ret.type
    return graph


def compile_function(fn, params, types, ret_annotation=None):
    """Lower a plain function (NOTE [ Script IR ]).

    Args:
        fn: the Python function.
        params (list[str]): its argument names.
        types (list): their TorchScript types.
        ret_annotation: the annotated result type, or None.

    Returns:
        Graph

    Raises:
        Unsupported: the source uses something this front end does not lower.

    Example::

        >>> def f(x):
        ...     return x + 1
        >>> compile_function(f, ["x"], [T.TensorType.get()]).return_type
        Tensor
    """
    return _lower(fn, params, types, ret_annotation)


def compile_module_forward(module):
    """Lower ``module.forward`` (NOTE [ Script IR ]); cached on the module's class.

    Args:
        module: the ``nn.Module`` (or a script view of one).

    Returns:
        Graph

    Raises:
        Unsupported: the source uses something this front end does not lower.

    Example::

        >>> class Neg(ember.nn.Module):
        ...     def forward(self, x):
        ...         return -x
        >>> compile_module_forward(Neg()).return_type  # doctest: +SKIP
        Tensor
    """
    import inspect
    import typing

    from ._script_function import _type_of_annotation

    cls = type(module).__dict__.get("_original_class") or type(module)
    fn = cls.forward
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())[1:]
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    types = [_type_of_annotation(hints.get(p.name, p.annotation)) for p in params]
    ret = hints.get("return", sig.return_annotation)
    ret_t = None if ret is inspect.Signature.empty else _type_of_annotation(ret)
    graph = _lower(fn, [p.name for p in params], types, ret_t, module=module, method=True)
    from ._script_function import _default_code

    heads = ["self"]
    for p, t in zip(params, types, strict=True):
        text = f"{p.name}: {t.annotation_str}"
        if p.default is not inspect.Parameter.empty:
            text += "=" + _default_code(p.default)
        heads.append(text)
    graph.signature = "def forward(" + ",\n    ".join(heads) + \
        f") -> {graph.return_type.annotation_str}:"
    return graph


# -- printing: code ------------------------------------------------------------------------

_LONG = 40
# (position, default) of trailing arguments the printer leaves out when they are the default
_TRAILING_DEFAULTS = {"cat": ((1, 0),), "stack": ((1, 0),), "flatten": ((1, 0), (2, -1))}


def _inlinable(v) -> bool:
    n = v.node
    if n is None or len(n.outputs) != 1 or len(v.uses) != 1 or n.blocks:
        return False
    user, offset = v.uses[0]
    if v.name is not None and user.kind != "prim::Return":
        return False
    if user.kind == "prim::Loop" and offset >= 2:
        return False
    return True


class _CodePrinter:
    """TorchScript's code printer over a ``Graph`` (NOTE [ Script IR ])."""

    def __init__(self):
        self.inline: set = set()       # nodes written inside their user
        self.expr: dict = {}           # id(value) -> its text
        self.used: set = set()
        self.temps = 0
        self.lines: list[str] = []
        self.level = 1

    # scanning: which nodes are written in place
    @staticmethod
    def _previous(block, node):
        nodes = block.nodes
        i = len(nodes) if node.kind == "prim::Return" else nodes.index(node)
        for j in range(i - 1, -1, -1):
            if nodes[j].kind != "prim::Constant":
                return nodes[j]
        return None

    def _scan_value(self, point, v):
        n = v.node
        if n is None:
            return point
        if n.kind == "prim::Constant":
            self.inline.add(n)
        elif n is point and _inlinable(v):
            point = self._scan_node(point)
            self.inline.add(n)
        return point

    def _scan_node(self, node):
        if node in self.inline:
            return node
        for b in node.blocks:
            self._scan_block(b)
        point = self._previous(node.block, node)
        for v in reversed(node.inputs):
            point = self._scan_value(point, v)
        return point

    def _scan_block(self, block):
        self._scan_node(block.ret)
        for node in reversed(block.nodes):
            self._scan_node(node)

    # names
    def _name(self, v) -> str:
        base = v.name
        if base is None:
            while f"_{self.temps}" in self.used:
                self.temps += 1
            name = f"_{self.temps}"
            self.temps += 1
        elif base not in self.used:
            name = base
        else:
            k = 0
            while f"{base}{k}" in self.used:
                k += 1
            name = f"{base}{k}"
        self.used.add(name)
        self.expr[id(v)] = name
        return name

    def text(self, v) -> str:
        if isinstance(v.const, _Function):
            return v.const.name
        if v.node is not None and v.node.kind == "prim::Constant":
            return _literal(v.const)
        return self.expr[id(v)]

    def _emit(self, line):
        self.lines.append("  " * self.level + line)

    def _split_long(self, inputs):
        last = 0
        for i, v in enumerate(inputs):
            if v.node in self.inline and v.node.kind != "prim::Constant" and \
                    len(self.expr[id(v)]) >= _LONG:
                last = i + 1
        for v in inputs[:last]:
            if v.node in self.inline and v.node.kind != "prim::Constant":
                text = self.expr[id(v)]
                self._emit(f"{self._name(v)} = {text}")

    def _node_expr(self, node) -> str:
        args = [self.text(v) for v in node.inputs]
        kind = node.kind
        if kind.startswith("aten::"):
            name = kind[6:]
            if name == "Bool":
                return f"bool({args[0]})"
            if name in ("Int", "Float"):
                return f"{name.lower()}({args[0]})"
            if name == "__getitem__":
                return f"({args[0]})[{args[1]}]"
            if name == "len":
                return f"len({args[0]})"
            if name == "__not__":
                return f"torch.__not__({args[0]})"
            defaults = _TRAILING_DEFAULTS.get(name, ())
            for position, value in reversed(defaults):
                if len(args) == position + 1 and node.inputs[position].const == value and \
                        node.inputs[position].node.kind == "prim::Constant":
                    args.pop()
            return f"torch.{name}({', '.join(args)})"
        if kind == "prim::CallFunction":
            return f"__torch__.torch.nn.functional.{node.inputs[0].const.name}(" + "".join(
                a + ", " for a in args[1:]) + ")"
        if kind == "prim::GetAttr":
            if not node.attr.isidentifier():
                return f'getattr({args[0]}, "{node.attr}")'
            return f"{args[0]}.{node.attr}"
        if kind == "prim::CallMethod":
            return f"({args[0]}).{node.attr}(" + "".join(a + ", " for a in args[1:]) + ")"
        if kind == "prim::TupleConstruct":
            return "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
        if kind == "prim::ListConstruct":
            return "[" + ", ".join(args) + "]"
        if kind == "prim::unchecked_cast":
            return f"unchecked_cast({node.output.type.annotation_str}, {args[0]})"
        raise Unsupported(kind)

    def _assign(self, lhs, rhs_texts):
        if not lhs:
            return
        self._emit(", ".join(lhs) + " = " + ", ".join(rhs_texts))

    def _block_body(self, block, outs):
        """The nodes of a branch or loop body and the assignment of its results."""
        start = len(self.lines)
        self.print_nodes(block.nodes)
        self._split_long(block.ret.inputs)
        self._assign(outs, [self.text(v) for v in block.ret.inputs[len(block.ret.inputs)
                                                                   - len(outs):]])
        if len(self.lines) == start:
            self._emit("pass")

    def print_nodes(self, nodes):
        for node in nodes:
            if node.kind == "prim::Constant":
                continue
            self._split_long(node.inputs)
            if node in self.inline:
                self.expr[id(node.output)] = self._node_expr(node)
                continue
            if node.kind == "prim::If":
                self.print_if(node)
            elif node.kind == "prim::Loop":
                self.print_loop(node)
            elif node.kind == "prim::TupleUnpack":
                names = [self._name(v) for v in node.outputs]
                self._emit("".join(n + ", " for n in names).rstrip() + " = "
                           + self.text(node.inputs[0]))
            elif node.outputs:
                text = self._node_expr(node)
                self._emit(f"{self._name(node.output)} = {text}")
            else:
                self._emit(self._node_expr(node))

    def print_if(self, node):
        outs = [self._name(v) for v in node.outputs]
        self._emit(f"if {self.text(node.inputs[0])}:")
        for i, block in enumerate(node.blocks):
            if i == 1:
                self._emit("else:")
            self.level += 1
            self._block_body(block, outs)
            self.level -= 1

    def print_loop(self, node):
        trip, cond, inits = node.inputs[0], node.inputs[1], node.inputs[2:]
        block = node.blocks[0]
        is_for = cond.node is not None and cond.node.kind == "prim::Constant" and \
            cond.const is True and not (trip.node is not None and trip.node.kind ==
                                        "prim::Constant" and trip.const == 9223372036854775807)
        outs = []
        for out, init, inp in zip(node.outputs, inits, block.inputs[1:], strict=True):
            name = self._name(out)
            self.expr[id(inp)] = name
            outs.append(name)
            self._emit(f"{name} = {self.text(init)}")
        if is_for:
            counter = self._name(block.inputs[0])
            self._emit(f"for {counter} in range({self.text(trip)}):")
            self.level += 1
            self._block_body(block, outs)
            self.level -= 1
            return
        # a while loop: the condition is a variable, assigned with the carried values
        flag = Value(_BOOL, None, None)
        flag_name = self._name(flag)
        self._emit(f"{flag_name} = {self.text(cond)}")
        self._emit(f"while {flag_name}:")
        self.level += 1
        start = len(self.lines)
        self.print_nodes(block.nodes)
        self._split_long(block.ret.inputs)
        self._assign([flag_name, *outs], [self.text(v) for v in block.ret.inputs])
        if len(self.lines) == start:
            self._emit("pass")
        self.level -= 1

    def run(self, graph, head) -> str:
        block = graph.block
        for v in block.inputs:
            self.used.add(v.name)
            self.expr[id(v)] = v.name
        self._scan_block(block)
        self.print_nodes(block.nodes)
        self._split_long(block.ret.inputs)
        ret = block.ret.inputs[0]
        self._emit(f"return {self.text(ret)}")
        return head + "\n" + "\n".join(self.lines) + "\n"


def _literal(value) -> str:
    from ._script_function import _default_code

    if value is None:
        return "None"
    return _default_code(value)


def code_text(graph, head) -> str:
    """``graph`` as TorchScript's code, under the signature line ``head``.

    Args:
        graph (Graph): a lowered function.
        head (str): its printed signature (``def f(x: Tensor) -> Tensor:``).

    Returns:
        str

    Example::

        >>> def f(x):
        ...     return x + 1
        >>> g = compile_function(f, ["x"], [T.TensorType.get()])
        >>> print(code_text(g, "def f(x: Tensor) -> Tensor:"))
        def f(x: Tensor) -> Tensor:
          return torch.add(x, 1)
        <BLANKLINE>
    """
    return _CodePrinter().run(graph, head)


# -- printing: graph -----------------------------------------------------------------------

def _ir_type(t) -> str:
    kind = t.kind()
    if kind == "ListType":
        return _ir_type(t.getElementType()) + "[]"
    if kind == "OptionalType":
        return _ir_type(t.getElementType()) + "?"
    if kind == "TupleType":
        return "(" + ", ".join(_ir_type(e) for e in t.elements()) + ")"
    if kind == "NumberType":
        return "Scalar"
    return str(t)


def _ir_const(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return f"[value={int(value)}]"
    if isinstance(value, str):
        return f'[value="{value}"]'
    return f"[value={_literal(value)}]"


class _GraphPrinter:
    """TorchScript's IR text of a ``Graph`` (NOTE [ Script IR ]); constants first."""

    def __init__(self):
        self.number = 0
        self.counts: dict = {}
        self.names: dict = {}

    def name(self, v) -> str:
        key = id(v)
        if key not in self.names:
            bare = v.name is not None and v.name not in self.counts and (
                v.node is None and v.name == "self" or v.node is not None and (
                    v.node.kind == "prim::GetAttr" or v.node.blocks))
            if bare:  # TorchScript's own names for attributes and merged values
                self.counts[v.name] = 0
                self.names[key] = v.name
            elif v.name is None:
                self.number += 1
                self.names[key] = str(self.number)
            else:
                k = self.counts.get(v.name, 0) + 1
                self.counts[v.name] = k
                self.names[key] = f"{v.name}.{k}"
        return "%" + self.names[key]

    def decl(self, v) -> str:
        return f"{self.name(v)} : {_ir_type(v.type)}"

    @staticmethod
    def _where(node) -> str:
        return f" # {node.where[0]}:{node.where[1]}:{node.where[2]}" if node.where else ""

    def nodes(self, block, depth, out):
        pad = "  " * depth
        for node in block.nodes:
            if node.kind == "prim::Constant" and depth > 1:
                continue
            outs = ", ".join(self.decl(v) for v in node.outputs)
            ins = ", ".join(self.name(v) for v in node.inputs)
            if node.kind == "prim::Constant":
                attr = _ir_const(node.attr)
            elif node.attr is not None:
                attr = f'[name="{node.attr}"]'
            else:
                attr = ""
            lhs = f"{outs} = " if outs else ""
            out.append(f"{pad}{lhs}{node.kind}{attr}({ins}){self._where(node)}")
            for i, b in enumerate(node.blocks):
                args = ", ".join(self.decl(v) for v in b.inputs)
                out.append(f"{pad}  block{i}({args}):")
                self.nodes(b, depth + 2, out)
                out.append(f"{pad}    -> (" + ", ".join(self.name(v) for v in b.ret.inputs)
                           + ")")

    def run(self, graph) -> str:
        block = graph.block
        heads = [self.decl(v) for v in block.inputs]
        lines = ["graph(" + (",\n" + " " * 6).join(heads) + "):"]
        # constants of every block go to the top, as TorchScript's constant pooling puts them
        consts = []

        def collect(b):
            for n in b.nodes:
                if n.kind == "prim::Constant":
                    consts.append(n)
                for sub in n.blocks:
                    collect(sub)

        collect(block)
        pooled: dict = {}
        for node in consts:
            key = (str(node.output.type), repr(node.attr))
            if key in pooled:  # one constant per value, as TorchScript pools them
                self.names[id(node.output)] = self.names[id(pooled[key])]
                continue
            pooled[key] = node.output
            attr = f'[name="{node.attr}"]' if isinstance(node.output.const, _Function) \
                else _ir_const(node.attr)
            lines.append(f"  {self.decl(node.output)} = prim::Constant"
                         f"{attr}(){self._where(node)}")
        rest = Block()
        rest.nodes = [n for n in block.nodes if n.kind != "prim::Constant"]
        self.nodes(rest, 1, lines)
        lines.append("  return (" + ", ".join(self.name(v) for v in block.ret.inputs) + ")")
        return "\n".join(lines) + "\n"


def graph_text(graph) -> str:
    """``graph`` in TorchScript's IR syntax (NOTE [ Script IR ]).

    Args:
        graph (Graph): a lowered function.

    Returns:
        str

    Example::

        >>> def f(x):
        ...     return -x
        >>> print(graph_text(compile_function(f, ["x"], [T.TensorType.get()])))
        ... # doctest: +ELLIPSIS
        graph(%x.1 : Tensor):
          %1 : Tensor = aten::neg(%x.1) # ...
          return (%1)
        <BLANKLINE>
    """
    return _GraphPrinter().run(graph)


# -- inlining ------------------------------------------------------------------------------

def inline_calls(graph):
    """``graph`` with every call of a submodule's ``forward`` replaced by the submodule's own
    lowered body, recursively (what ``inlined_graph`` shows). A submodule that was traced,
    or whose source the lowering does not know, stays a ``prim::CallMethod``.

    Args:
        graph (Graph): a lowered ``forward``.

    Returns:
        Graph: a new graph; ``graph`` is left as it was.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2))
        >>> g = inline_calls(compile_module_forward(net))
        >>> [n.kind for n in g.block.nodes if n.kind != "prim::Constant"]  # doctest: +SKIP
        ['prim::GetAttr', 'prim::GetAttr', 'prim::GetAttr', 'aten::linear']
    """
    new = Graph()
    new.signature, new.return_type = graph.signature, graph.return_type
    values: dict = {}
    new.block.inputs = [_copy_value(v, values) for v in graph.block.inputs]
    new.block.set_returns(_inline_into(graph.block, new.block, values))
    return new


def _copy_value(v, values, node=None):
    copy = Value(v.type, v.name, node, v.const)
    values[id(v)] = copy
    return copy


def _inline_into(src, dst, values) -> list:
    """Copy ``src``'s nodes into ``dst`` (inlining calls); the copies of its results."""
    for node in src.nodes:
        if node.kind == "prim::CallMethod":
            callee = node.inputs[0].const
            body = None
            if callee is not None and "_ember_trace_graph" not in callee.__dict__:
                try:
                    body = compile_module_forward(callee)
                except Unsupported:
                    body = None
            if body is not None:
                inner = {id(p): values[id(a)] for p, a in zip(body.block.inputs, node.inputs,
                                                              strict=True)}
                result = _inline_into(body.block, dst, inner)
                values[id(node.output)] = result[0]
                continue
        copy = Node(node.kind, [values[id(v)] for v in node.inputs],
                    [o.type for o in node.outputs], node.attr, node.where,
                    [o.name for o in node.outputs])
        for o, c in zip(node.outputs, copy.outputs, strict=True):
            c.const = o.const
            values[id(o)] = c
        dst.append(copy)
        for b in node.blocks:
            nb = Block()
            nb.inputs = [_copy_value(v, values) for v in b.inputs]
            nb.set_returns(_inline_into(b, nb, values))
            copy.blocks.append(nb)
    return [values[id(v)] for v in src.ret.inputs]

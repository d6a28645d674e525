"""``GraphModule``: an ``nn.Module`` whose ``forward`` is generated from an fx ``Graph``.

NOTE [ GraphModule code and pickling ]
A GraphModule copies from the module it was made from exactly the submodules, parameters
and buffers its graph names (``get_attr``/``call_module`` targets), creating empty
``Module`` s for the path between (``layers.0.conv`` makes ``layers`` and ``layers.0``).
``recompile()`` turns the graph into Python source (``gm.code``), compiles it and installs
it as ``forward`` -- on a class of the instance's own, so two GraphModules never share a
``forward``. The source is registered with ``linecache`` so tracebacks and
``inspect.getsource`` show it. A GraphModule pickles (and so ``ember.save`` s) as its
generated source and its attributes; unpickling compiles the source and traces it again
with every submodule a leaf, which rebuilds the same graph.
"""

from __future__ import annotations

import copy
import itertools
import linecache
import os
import sys
import types
from typing import Any

import ember
from ember.nn import Module

from ._codegen import PythonCode, _qualified_name
from .graph import Graph

__all__ = ["GraphModule"]

_next_id = itertools.count()


def _exec_with_source(src: str, globals_: dict, name: str) -> None:
    """Run ``src`` in ``globals_``, its text registered under a unique file name."""
    key = f"<eval_with_key>.{next(_next_id)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _forward_from_src(src: str, globals_: dict):
    globals_copy = dict(globals_)
    _exec_with_source(src, globals_copy, "forward")
    fn = globals_copy["forward"]
    del globals_copy["forward"]
    return fn


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # the whole subtree is already installed
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, ember.nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, ember.nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


# -- pickling (NOTE [ GraphModule code and pickling ]) --------------------------------------------


def _globals_spec(globals_: dict) -> dict:
    spec = {}
    for k, v in globals_.items():
        if isinstance(v, types.ModuleType):
            spec[k] = ("module", v.__name__)
        else:
            spec[k] = ("object", v)
    return spec


def _deserialize_graph_module(src: str, body: dict, class_name: str, spec: dict):
    import importlib

    from ._symbolic_trace import Tracer

    globals_ = {k: importlib.import_module(v) if kind == "module" else v
                for k, (kind, v) in spec.items()}
    forward = _forward_from_src(src, globals_)

    class _CodeOnlyModule(Module):
        def __init__(self, body):
            super().__init__()
            self.__dict__ = body

    _CodeOnlyModule.forward = forward
    tracer_cls = body.get("_tracer_cls") or Tracer
    if not (isinstance(tracer_cls, type) and issubclass(tracer_cls, Tracer)):
        tracer_cls = Tracer

    class _KeepModules(tracer_cls):
        def is_leaf_module(self, m, qualname):
            return True

    com = _CodeOnlyModule(body)
    graph = _KeepModules().trace(com)
    gm = GraphModule(com, graph, class_name=class_name)
    for k, v in body.items():
        if not hasattr(gm, k):
            setattr(gm, k, v)
    return gm


class GraphModule(Module):
    """An ``nn.Module`` made from a ``Graph``: it holds the attributes the graph names and
    runs generated Python code as ``forward`` (NOTE [ GraphModule code and pickling ]).

    Args:
        root: the module to take the graph's submodules, parameters and buffers from, or a
            dict from qualified name to object.
        graph: the graph.
        class_name: the name shown by ``print`` and ``print_readable``.

    Example::

        >>> import ember, ember.fx as fx
        >>> g = fx.Graph()
        >>> x = g.placeholder("x")
        >>> _ = g.output(g.call_function(ember.relu, (x,)))
        >>> gm = fx.GraphModule(ember.nn.Module(), g)
        >>> gm(ember.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """

    def __new__(cls, *args, **kwargs):
        # every instance its own class, so that recompile() sets only its own forward
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    targets.append(node.target)
            targets.sort(key=lambda t: t.count("."))
            for t in targets:
                _assign_attr(root[t], self, t)
        else:
            raise RuntimeError(f"Unsupported type {root} passed for root!")
        self.graph = graph
        self._tracer_cls = graph._tracer_cls if _is_picklable_class(graph._tracer_cls) else None
        self._tracer_extras = graph._tracer_extras
        self.meta: dict = {}

    # -- the graph and its code ---------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        """The graph; assigning one takes ownership of it and recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Call recompile()")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate ``forward`` from the graph: call it after changing the graph.

        Returns:
            The ``PythonCode`` generated.

        Example::

            >>> import ember, ember.fx as fx
            >>> gm = fx.symbolic_trace(lambda x: x + 1)
            >>> for n in gm.graph.nodes:
            ...     if n.op == "call_function":
            ...         n.args = (n.args[0], 2)
            >>> _ = gm.recompile()
            >>> gm(ember.zeros(1))
            tensor([2.])
        """
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        self._lineno_map = python_code._lineno_map
        cls = type(self)
        cls.forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False, *,
                       fast_sympy_print: bool = False, expanded_def: bool = False) -> str:
        """The generated code as a class definition (GraphModule children nested inside).

        Args:
            print_output: also print it.
            include_stride: accepted for torch's signature (no effect).
            include_device: accepted for torch's signature (no effect).
            colored: accepted for torch's signature (no effect).
            fast_sympy_print: accepted for torch's signature (no effect).
            expanded_def: accepted for torch's signature (no effect).

        Returns:
            The text.

        Example::

            >>> import ember.fx as fx
            >>> gm = fx.symbolic_trace(lambda x: x + 1)
            >>> print(gm.print_readable(print_output=False).splitlines()[0])
            class <lambda>(torch.nn.Module):
        """
        out = self._readable(self._get_name())
        if print_output:
            print(out)
        return out

    def _readable(self, name: str) -> str:
        src = self._graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
        code = _addindent(f"class {name}(torch.nn.Module):\n" + src, 4).rstrip() + "\n"
        subs = [""]
        for child_name, child in self.named_children():
            if isinstance(child, GraphModule):
                subs.append(child._readable(child_name))
        return code + _addindent("\n".join(subs), 4)

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    def _get_name(self) -> str:
        return type(self).__name__

    # -- submodules -----------------------------------------------------------------------------

    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at dotted path ``target``, creating empty modules on the way.

        Args:
            target: e.g. ``"block.conv"``.
            m: the module.

        Returns:
            False if a non-module attribute is in the way, else True.

        Example::

            >>> import ember, ember.fx as fx
            >>> gm = fx.symbolic_trace(lambda x: x)
            >>> gm.add_submodule("a.b", ember.nn.ReLU())
            True
        """
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at dotted path ``target``.

        Args:
            target: its path.

        Returns:
            False if there is no such submodule, else True.

        Example::

            >>> import ember, ember.fx as fx
            >>> gm = fx.symbolic_trace(lambda x: x)
            >>> _ = gm.add_submodule("relu", ember.nn.ReLU())
            >>> gm.delete_submodule("relu"), gm.delete_submodule("relu")
            (True, False)
        """
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod) or \
                not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule the graph neither calls nor reads (``call_module`` /
        ``get_attr``), keeping the parents and the children of those used.

        Example::

            >>> import ember, ember.fx as fx
            >>> gm = fx.symbolic_trace(lambda x: x)
            >>> _ = gm.add_submodule("unused", ember.nn.ReLU())
            >>> gm.delete_all_unused_submodules()
            >>> hasattr(gm, "unused")
            False
        """
        used: set = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
                if node.op == "call_module":
                    try:
                        sub = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    for name, _ in sub.named_modules():
                        if name:
                            used.add(node.target + "." + name)
        to_delete = [name for name, _ in self.named_modules() if name and name not in used]
        for name in to_delete:
            self.delete_submodule(name)

    # -- copying and saving ---------------------------------------------------------------------

    def __reduce__(self):
        body = dict(self.__dict__)
        for k in ("_graph", "_code", "_globals", "_lineno_map"):
            body.pop(k, None)
        python_code = self._graph.python_code(root_module="self")
        return (_deserialize_graph_module,
                (python_code.src, body, "GraphModule", _globals_spec(python_code.globals)))

    def __deepcopy__(self, memo):
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        GraphModule.__init__(res, fake, fake.__dict__["_graph"])
        for k, v in fake.__dict__.items():
            if k not in res.__dict__:
                res.__dict__[k] = v
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph)
        res.meta = getattr(self, "meta", {})
        return res

    def to_folder(self, folder: str | os.PathLike, module_name: str = "FxModule") -> None:
        """Write the module as a folder: ``module.py`` (the code, as a class) and
        ``state_dict.pt`` (its tensors, ``ember.save``); the submodules the code calls are
        pickled into ``submodules.pt``. Import the folder and instantiate ``module_name``
        to get the module back.

        Args:
            folder: the directory (created if missing).
            module_name: the class name in ``module.py``.

        Example::

            >>> import tempfile, ember.fx as fx
            >>> gm = fx.symbolic_trace(lambda x: x * 2)
            >>> gm.to_folder(tempfile.mkdtemp())
        """
        folder = os.fspath(folder)
        os.makedirs(folder, exist_ok=True)
        ember.save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        children = {name: m for name, m in self.named_children()}
        ember.save(children, os.path.join(folder, "submodules.pt"))
        python_code = self._graph.python_code(root_module="self")
        imports = ["import os", "import ember", "import ember as torch"]
        for name, obj in python_code.globals.items():
            if name in ("torch", "ember") or isinstance(obj, types.ModuleType):
                continue
            if name in ("inf", "nan", "NoneType", "device"):
                continue
            qual = _qualified_name(obj) if callable(obj) else None
            if qual and "." in qual:
                mod, attr = qual.rsplit(".", 1)
                imports.append(f"from {mod} import {attr} as {name}")
        imports.append("from math import inf, nan")
        imports.append("NoneType = type(None)")
        imports.append("device = ember.device")
        buffers = sorted(k for k in self.state_dict() if k.count(".") == 0)
        init = [
            f"class {module_name}(torch.nn.Module):",
            "    def __init__(self):",
            "        super().__init__()",
            "        here = os.path.dirname(os.path.abspath(__file__))",
            "        for name, m in torch.load(os.path.join(here, 'submodules.pt'),",
            "                                  weights_only=False).items():",
            "            self.add_module(name, m)",
            "        state = torch.load(os.path.join(here, 'state_dict.pt'))",
        ]
        for b in buffers:
            if isinstance(getattr(self, b), ember.nn.Parameter):
                init.append(f"        self.{b} = torch.nn.Parameter(state[{b!r}])")
            else:
                init.append(f"        self.register_buffer({b!r}, state[{b!r}])")
        init.append("        self.load_state_dict(state)")
        # ``wrap`` registrations run at module level; the method goes in the class
        src_lines = python_code.src.split("\n")
        wraps = [ln for ln in src_lines if ln.startswith("torch.fx._symbolic_trace.wrap(")]
        # ``forward`` is defined at module level and then attached: inside a class body,
        # global names starting with ``__`` (``__main___helper``) would be name-mangled
        body = "\n".join(ln for ln in src_lines if ln not in wraps).strip("\n ")
        text = "\n".join(imports + [""] + wraps) + "\n\n\n" + body + "\n\n\n" + \
            "\n".join(init) + f"\n\n\n{module_name}.forward = forward\n"
        with open(os.path.join(folder, "module.py"), "w") as f:
            f.write(text)
        with open(os.path.join(folder, "__init__.py"), "w") as f:
            f.write(f"from .module import {module_name}\n")


def _is_picklable_class(cls) -> bool:
    if cls is None:
        return False
    mod = sys.modules.get(getattr(cls, "__module__", ""), None)
    return mod is not None and getattr(mod, cls.__qualname__, None) is cls

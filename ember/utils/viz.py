"""``ember.utils.viz``: a picture of the autograd graph (what torchviz's ``make_dot`` draws).

``make_dot(y, params=dict(model.named_parameters()))`` walks the backward graph from ``y``'s
``grad_fn`` and returns a ``DotGraph``: its ``source`` is Graphviz DOT text, and ``pipe()`` /
``render()`` turn it into SVG (or PNG, PDF...) with Graphviz's ``dot`` program when it is
installed (``apt-get install graphviz``, ``brew install graphviz``, or ``conda install
graphviz``); in a notebook the graph displays itself as SVG.

The picture uses torchviz's colours, so it reads the same: green boxes are the outputs,
grey boxes the backward nodes (``MulBackward0``), blue boxes the leaves that receive
gradients (named by ``params``, with their shapes), and, with ``show_saved=True``, orange
boxes the tensors each node saved for backward, with their shapes. Edges run from a
node's inputs to the node, in the forward direction.

Example::

    >>> import ember
    >>> from ember.utils.viz import make_dot
    >>> model = ember.nn.Linear(3, 2)
    >>> y = model(ember.ones(4, 3)).relu().sum()
    >>> dot = make_dot(y, params=dict(model.named_parameters()), show_saved=True)
    >>> print(dot.source)  # doctest: +ELLIPSIS
    digraph {
    ...
        n1 [label=SumBackward0 fillcolor=lightgrey]
    ...
        n8 [label="weight\\n(2, 3)" fillcolor=lightblue]
    ...
    }
    <BLANKLINE>
    >>> dot.render("graph", format="svg")  # doctest: +SKIP
    'graph.svg'
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from .._core.tensor import Tensor

__all__ = ["DotGraph", "make_dot"]

_PLAIN_ID = re.compile(r"^[A-Za-z_][A-Za-z_0-9]*$")


def _quote(s: str) -> str:
    """A DOT attribute value: bare when it is an identifier, else a quoted string."""
    if _PLAIN_ID.match(s):
        return s
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


def _size(t) -> str:
    return "(" + ", ".join(str(int(d)) for d in t.shape) + ")"


class DotGraph:
    """A Graphviz graph as DOT text, with rendering through the ``dot`` program.

    Mirrors the parts of ``graphviz.Digraph`` that torchviz users call: ``source``,
    ``pipe``, ``render`` and notebook display.

    Args:
        source (str): the DOT text.

    Example::

        >>> g = DotGraph("digraph {\\n    a -> b\\n}\\n")
        >>> print(g)
        digraph {
            a -> b
        }
        <BLANKLINE>
    """

    def __init__(self, source: str):
        self.source = source

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<DotGraph with {self.source.count(chr(10))} lines>"

    def pipe(self, format: str = "svg") -> bytes:  # noqa: A002  (graphviz's name)
        """The graph rendered by Graphviz's ``dot`` program, e.g. SVG bytes.

        Args:
            format (str): any output format ``dot -T`` knows: ``"svg"``, ``"png"``, ``"pdf"``.

        Returns:
            bytes

        Raises:
            RuntimeError: when Graphviz's ``dot`` program is not installed (the DOT text in
                ``source`` needs no Graphviz).

        Example::

            >>> svg = make_dot(y).pipe("svg")  # doctest: +SKIP
        """
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError(
                "rendering the graph needs Graphviz's `dot` program, which is not installed: "
                "install Graphviz (apt-get install graphviz, brew install graphviz or conda "
                "install graphviz), or use the DOT text in `.source`")
        done = subprocess.run([exe, f"-T{format}"], input=self.source.encode(),
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"dot failed: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout

    def render(self, filename: str = "graph", format: str = "svg",  # noqa: A002
               directory: str | None = None) -> str:
        """Write ``<filename>`` (the DOT text) and ``<filename>.<format>`` (the picture).

        Args:
            filename (str): the path without extension.
            format (str): the picture's format.
            directory (str, optional): a directory to put both files in.

        Returns:
            str: the picture's path.

        Example::

            >>> make_dot(y).render("graph", format="png")  # doctest: +SKIP
            'graph.png'
        """
        path = os.path.join(directory, filename) if directory else filename
        picture = self.pipe(format)
        with open(path, "w") as f:
            f.write(self.source)
        out = f"{path}.{format}"
        with open(out, "wb") as f:
            f.write(picture)
        return out

    def save(self, filename: str) -> str:
        """Write the DOT text to ``filename``; returns the path.

        Example::

            >>> make_dot(y).save("graph.dot")  # doctest: +SKIP
            'graph.dot'
        """
        with open(filename, "w") as f:
            f.write(self.source)
        return filename

    def _repr_svg_(self):  # Jupyter
        try:
            return self.pipe("svg").decode()
        except RuntimeError:
            return None


def _attr_text(value, max_chars: int) -> str:
    s = str(value)
    return s if len(s) <= max_chars else s[:max_chars - 3] + "..."


def make_dot(var, params=None, show_attrs: bool = False, show_saved: bool = False,
             max_attr_chars: int = 50) -> DotGraph:
    """Draw the backward graph that produced ``var`` (torchviz's ``make_dot``).

    Args:
        var (Tensor or sequence of Tensors): the output(s) to draw the graph of.
        params (dict or nn.Module, optional): name -> tensor, e.g.
            ``dict(model.named_parameters())``, to label the leaves; a module stands for its
            named parameters.
        show_attrs (bool): list each node's saved non-tensor values (dims, scalars) in its
            box.
        show_saved (bool): draw the tensors each node saved for backward, with their shapes.
        max_attr_chars (int): cut attribute values longer than this.

    Returns:
        DotGraph: ``.source`` is the DOT text; ``.pipe("svg")`` / ``.render(name)`` draw it.

    Raises:
        TypeError: if ``var`` holds something other than tensors.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> dot = make_dot((x * 2).sum(), params={"x": x})
        >>> [line.strip() for line in dot.source.splitlines() if "->" in line]
        ['n3 -> n2', 'n2 -> n1', 'n1 -> n0']
    """
    from .. import nn

    if isinstance(params, nn.Module):
        params = dict(params.named_parameters())
    names = {id(t): name for name, t in (params or {}).items()}
    outputs = list(var) if isinstance(var, (list, tuple)) else [var]
    for t in outputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"make_dot: expected a Tensor or a sequence of Tensors, but got "
                            f"{type(t).__name__}")

    lines: list[str] = []
    ids: dict[int, str] = {}
    keep = []  # objects whose ids are in ``ids``, alive until the walk ends

    def node_id(obj) -> str:
        key = id(obj)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
            keep.append(obj)
        return ids[key]

    def box(obj, label: str, color: str) -> str:
        nid = node_id(obj)
        lines.append(f"    {nid} [label={_quote(label)} fillcolor={color}]")
        return nid

    def leaf_label(t) -> str:
        name = names.get(id(t))
        return f"{name}\n{_size(t)}" if name is not None else _size(t)

    seen: set[int] = set()

    def visit(fn) -> str:
        if id(fn) in seen:
            return ids[id(fn)]
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if type(fn).__name__ == "AccumulateGrad" and isinstance(variable, Tensor):
            return box(fn, leaf_label(variable), "lightblue")
        label = fn.name()
        saved = []
        attrs = []
        for attr in dir(fn):
            if not attr.startswith("_saved_"):
                continue
            try:
                value = getattr(fn, attr)
            except (AttributeError, RuntimeError):  # freed after backward
                continue
            short = attr[len("_saved_"):]
            tensors = [v for v in (value if isinstance(value, tuple) else (value,))
                       if isinstance(v, Tensor)]
            if tensors:
                saved.extend((short, v) for v in tensors)
            elif show_attrs:
                attrs.append(f"{short}: {_attr_text(value, max_attr_chars)}")
        if attrs:
            label += "\n" + "-" * max(len(a) for a in attrs) + "\n" + "\n".join(attrs)
        nid = box(fn, label, "lightgrey")
        if show_saved:
            for short, t in saved:
                sid = box(t, f"{short}\n{_size(t)}", "orange") if id(t) not in ids else ids[id(t)]
                lines.append(f"    {sid} -> {nid} [dir=none]")
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                lines.append(f"    {visit(nxt)} -> {nid}")
        return nid

    for t in outputs:
        out = box(t, _size(t) if id(t) not in names else leaf_label(t), "darkolivegreen1")
        if t.grad_fn is not None:
            lines.append(f"    {visit(t.grad_fn)} -> {out}")
    header = ["digraph {", '    graph [size="12,12"]',
              "    node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 "
              "shape=box style=filled]"]
    return DotGraph("\n".join(header + lines + ["}"]) + "\n")

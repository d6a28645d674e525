"""Find import cycles among ember's modules (issue 15, "a house without circles").

ARCHITECTURE.md §1 says imports go down the list, never up. An import cycle is the symptom
of an import that goes up: whichever module of the cycle Python reaches first sees the
others half-initialised, so the package works only in one import order. This script parses
every module under ``ember/`` with ``ast`` (nothing is imported or executed), builds the
graph "module A imports module B", and prints its strongly connected components.

    python tools/import_cycles.py              # exit status 1 if a module-level cycle exists
    python tools/import_cycles.py --deferred   # also report cycles closed by imports in functions

What counts as "A imports B" (B must be a module of the package; other imports are ignored):

- ``import ember.x.y`` (with or without ``as``) imports ``ember.x.y``.
- ``from ember.x import name`` and relative forms (``from .x import name``,
  ``from .. import _dispatch``; relative names are resolved against A's package) import
  ``ember.x.name`` when that is a submodule, and otherwise ``ember.x`` itself (the name is
  then defined by the module, or by the package's ``__init__.py``). ``import *`` imports the
  module it names.
- A package's ``__init__.py`` counts only when it is imported by name: ``import P``, or
  ``from P import name`` where ``name`` is not a submodule (so it is defined by the
  ``__init__``). Python also starts ``P/__init__.py`` on the way to any ``P.m``, but a
  partially initialised package is enough to import a submodule from, so that implicit step
  is not counted: a package whose ``__init__`` re-exports its submodules does not close a
  cycle merely because a submodule's own imports lead back into the package.
- A package ``__init__`` that loops over ``pkgutil.iter_modules(__path__)`` at module level
  (the way ``ember._ops`` discovers its op families) imports each of its submodules whose
  name does not start with ``_``. Other dynamic imports (``importlib.import_module``) are
  not seen.
- Imports inside ``if TYPE_CHECKING:`` never run, so they do not count.
- An import is *module-level* when it runs while A is being imported: at the top level,
  including inside ``if``/``try``/``with`` blocks and class bodies. An import inside a
  function body is *deferred*: it runs at call time, when every module is complete, so a
  cycle it closes does not make import order matter. Deferred imports are reported with
  ``--deferred`` only, never as a failure.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

Edges = dict[str, dict[str, int]]  # importer -> {imported module: line of the first import}


def find_modules(package_dir: Path) -> dict[str, Path]:
    """Map the dotted name of every module in a package to its source file.

    Args:
        package_dir: the package's directory (the one holding its ``__init__.py``); its
            name is the top-level package name.

    Returns:
        ``{"ember.nn.functional": Path(".../ember/nn/functional.py"), ...}``; a package is
        named by its directory and maps to its ``__init__.py``.

    Example:
        >>> "ember._dispatch" in find_modules(REPO / "ember")
        True
    """
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    """True for the condition of ``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_discovery_loop(node: ast.For) -> bool:
    """True for ``for ... in <...pkgutil.iter_modules(__path__)...>:``, the idiom a package
    uses to import every submodule without listing them."""
    for call in ast.walk(node.iter):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "iter_modules"):
            return True
    return False


def _import_statements(tree: ast.Module):
    """Yield ``(statement, is_deferred)`` for each import statement and submodule-discovery
    loop of a module, skipping ``if TYPE_CHECKING:`` blocks."""

    def visit(node, deferred):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.orelse:  # the ``else`` of TYPE_CHECKING does run
                    yield from visit_one(stmt, deferred)
                continue
            yield from visit_one(child, deferred)

    def visit_one(node, deferred):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, deferred
        elif isinstance(node, ast.For) and _is_discovery_loop(node):
            yield node, deferred
            yield from visit(node, deferred)
        else:
            inside_function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.Lambda))
            yield from visit(node, deferred or inside_function)

    yield from visit(tree, False)


def imported_modules(stmt: ast.stmt, importer: str, is_package: bool,
                     modules: dict[str, Path]) -> list[str]:
    """The package's modules that one import statement imports, per the module docstring.

    Args:
        stmt: an ``import``/``from ... import`` statement, or a discovery loop.
        importer: dotted name of the module holding the statement.
        is_package: whether ``importer`` is a package (its ``__init__.py``).
        modules: every module of the package, as from :func:`find_modules`.

    Returns:
        The imported module names, in statement order, without duplicates; modules
        outside the package (``numpy``, ``os``) are left out.

    Example:
        >>> mods = find_modules(REPO / "ember")
        >>> imported_modules(ast.parse("from .. import _dispatch").body[0],
        ...                  "ember._core.tensor", False, mods)
        ['ember._dispatch']
    """
    own_package = importer if is_package else importer.rpartition(".")[0]
    if isinstance(stmt, ast.For):  # discovery loop: every public submodule
        return [m for m in modules
                if m.rpartition(".")[0] == importer and not m.rpartition(".")[2].startswith("_")]
    if isinstance(stmt, ast.Import):
        targets = [alias.name for alias in stmt.names]
    else:
        if stmt.level:
            base_parts = own_package.split(".")[: len(own_package.split(".")) - stmt.level + 1]
            base = ".".join(base_parts + ([stmt.module] if stmt.module else []))
        else:
            base = stmt.module
        targets = []
        for alias in stmt.names:
            sub = f"{base}.{alias.name}"
            targets.append(sub if sub in modules else base)
    found = []
    for target in targets:
        if target in modules and target not in found:
            found.append(target)
    return found


def build_graph(package_dir: Path) -> tuple[Edges, Edges]:
    """Parse a package and build its import graphs.

    Args:
        package_dir: the package's directory, e.g. ``REPO / "ember"``.

    Returns:
        ``(module_level, deferred)``: two graphs over the same modules, each mapping an
        importer to ``{imported module: line number}``. ``deferred`` holds only the imports
        inside functions (an edge present in both keeps the module-level one alone).

    Example:
        >>> module_level, deferred = build_graph(REPO / "ember")
        >>> "ember._core.dtype" in module_level["ember._core.tensor"]
        True
    """
    modules = find_modules(package_dir)
    module_level: Edges = {m: {} for m in modules}
    deferred: Edges = {m: {} for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"
        for stmt, is_deferred in _import_statements(tree):
            for target in imported_modules(stmt, name, is_package, modules):
                graph = deferred if is_deferred else module_level
                if target != name:
                    graph[name].setdefault(target, stmt.lineno)
    for name in modules:
        for target in module_level[name]:
            deferred[name].pop(target, None)
    return module_level, deferred


def strongly_connected_components(graph: Edges) -> list[list[str]]:
    """The cycles of a graph: its strongly connected components of more than one node.

    Tarjan's algorithm; recursion depth is bounded by the number of modules.

    Args:
        graph: ``{node: {successor: anything}}``; successors need not be keys.

    Returns:
        Each component as a sorted list of nodes, components sorted by their first node.

    Example:
        >>> strongly_connected_components({"a": {"b": 1}, "b": {"a": 1, "c": 1}, "c": {}})
        [['a', 'b']]
    """
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def connect(node):
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                connect(succ)
                lowlink[node] = min(lowlink[node], lowlink[succ])
            elif succ in on_stack:
                lowlink[node] = min(lowlink[node], index[succ])
        if lowlink[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in graph:
        if node not in index:
            connect(node)
    return sorted(components)


def find_cycles(package_dir: Path, deferred: bool = False) -> list[list[str]]:
    """The import cycles of a package.

    Args:
        package_dir: the package's directory, e.g. ``REPO / "ember"``.
        deferred: if False, the cycles among module-level imports (the ones that make import
            order matter). If True, instead the cycles that exist only once the imports inside
            functions are added: the components of the whole graph that are not
            module-level components.

    Returns:
        Each cycle as a sorted list of dotted module names.

    Example:
        >>> find_cycles(REPO / "ember")
        []
    """
    module_level, deferred_edges = build_graph(package_dir)
    return _cycles(module_level, deferred_edges, deferred)


def _cycles(module_level: Edges, deferred_edges: Edges, deferred: bool) -> list[list[str]]:
    cycles = strongly_connected_components(module_level)
    if not deferred:
        return cycles
    every = {m: {**module_level[m], **deferred_edges[m]} for m in module_level}
    return [c for c in strongly_connected_components(every) if c not in cycles]


def describe(cycle: list[str], graph: Edges, modules: dict[str, Path]) -> str:
    """Render the edges of ``graph`` inside one cycle, each with the file and line of the
    import, one per line."""
    members = set(cycle)
    lines = []
    for module in cycle:
        path = modules[module].relative_to(REPO) if modules[module].is_relative_to(REPO) \
            else modules[module]
        for target, lineno in sorted(graph[module].items()):
            if target in members:
                lines.append(f"  {module} -> {target}  ({path}:{lineno})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print the import cycles of ``ember/`` (or another package) and return the exit status.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``): ``--deferred`` to also
            report cycles closed only by imports inside functions; ``--package DIR`` to
            check another package directory.

    Returns:
        1 if there is a cycle among module-level imports, else 0 (deferred cycles are
        reported, never a failure).

    Example:
        >>> main([])
        no import cycles among module-level imports of ember
        0
    """
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--deferred", action="store_true",
                        help="also report cycles closed only by imports inside functions")
    parser.add_argument("--package", type=Path, default=REPO / "ember",
                        help="package directory to check (default: ember/)")
    args = parser.parse_args(argv)
    package_dir = args.package.resolve()
    modules = find_modules(package_dir)
    module_level, deferred_edges = build_graph(package_dir)

    cycles = _cycles(module_level, deferred_edges, deferred=False)
    if cycles:
        print(f"{len(cycles)} import cycle(s) among module-level imports of {package_dir.name}:")
        for i, cycle in enumerate(cycles, 1):
            print(f"cycle {i} ({len(cycle)} modules):")
            print(describe(cycle, module_level, modules))
    else:
        print(f"no import cycles among module-level imports of {package_dir.name}")

    if args.deferred:
        only_deferred = _cycles(module_level, deferred_edges, deferred=True)
        print(f"{len(only_deferred)} cycle(s) closed only by imports inside functions "
              "(reported, not a failure):")
        for i, cycle in enumerate(only_deferred, 1):
            print(f"deferred cycle {i} ({len(cycle)} modules): {', '.join(cycle)}")
            print("imports inside functions among these modules:")
            print(describe(cycle, deferred_edges, modules))
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())

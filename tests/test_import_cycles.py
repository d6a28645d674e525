"""ember's modules import one another without cycles (issue 15; ARCHITECTURE.md section 1).

The checker is ``tools/import_cycles.py``; its module docstring says what counts as an import.
"""

import importlib.util
import pathlib
import textwrap

REPO = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("import_cycles", REPO / "tools" / "import_cycles.py")
import_cycles = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_cycles)


def _package(root, files):
    """Write ``{relative path: source}`` under ``root`` and return the package directory."""
    for rel, src in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(src))
    return root / "pkg"


def test_ember_has_no_module_level_import_cycles():
    cycles = import_cycles.find_cycles(REPO / "ember")
    assert cycles == [], "import cycles (run python tools/import_cycles.py): " + "; ".join(
        " <-> ".join(c) for c in cycles)


def test_find_cycles_reports_a_module_level_cycle(tmp_path):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "from .a import x\n",
        "pkg/c.py": "from .b import y\n",
    })
    assert import_cycles.find_cycles(pkg) == [["pkg.a", "pkg.b"]]


def test_find_cycles_reports_deferred_cycles_only_when_asked(tmp_path):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": """\
            def f():
                from . import a
            """,
    })
    assert import_cycles.find_cycles(pkg) == []
    assert import_cycles.find_cycles(pkg, deferred=True) == [["pkg.a", "pkg.b"]]


def test_find_cycles_ignores_type_checking_imports(tmp_path):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from .a import A
            """,
    })
    assert import_cycles.find_cycles(pkg) == []
    assert import_cycles.find_cycles(pkg, deferred=True) == []


def test_find_cycles_counts_class_bodies_and_blocks_as_module_level(tmp_path):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": """\
            try:
                from . import b
            except ImportError:
                pass
            """,
        "pkg/b.py": """\
            class B:
                from .a import x
            """,
    })
    assert import_cycles.find_cycles(pkg) == [["pkg.a", "pkg.b"]]


def test_find_cycles_resolves_relative_imports_against_the_importers_package(tmp_path):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/_dispatch.py": "from ._core.tensor import Tensor\n",
        "pkg/_core/__init__.py": "",
        "pkg/_core/tensor.py": "from .. import _dispatch\n",
    })
    assert import_cycles.find_cycles(pkg) == [["pkg._core.tensor", "pkg._dispatch"]]


def test_find_cycles_counts_a_package_init_only_when_a_name_is_imported_from_it(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/sub/__init__.py": "from .x import thing\nfrom ..user import use\n",
        "pkg/sub/x.py": "thing = 1\n",
        # importing the submodule pkg.sub.x does not need pkg/sub/__init__.py to finish
        "pkg/user.py": "from .sub.x import thing\nuse = thing\n",
    }
    assert import_cycles.find_cycles(_package(tmp_path / "submodule", files)) == []
    # importing a name the __init__ defines does
    files["pkg/user.py"] = "from .sub import thing\nuse = thing\n"
    assert import_cycles.find_cycles(_package(tmp_path / "name", files)) == [
        ["pkg.sub", "pkg.user"]]


def test_find_cycles_follows_a_package_that_discovers_its_submodules(tmp_path):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/ops/__init__.py": """\
            import importlib
            import pkgutil
            for _m in pkgutil.iter_modules(__path__):
                if not _m.name.startswith("_"):
                    importlib.import_module(f"{__name__}.{_m.name}")
            """,
        "pkg/ops/add.py": "from ..core import Tensor\n",
        "pkg/ops/_helpers.py": "",
        "pkg/core.py": "from .ops import add\nTensor = object\n",
    })
    module_level, _ = import_cycles.build_graph(pkg)
    assert set(module_level["pkg.ops"]) == {"pkg.ops.add"}
    assert import_cycles.find_cycles(pkg) == [["pkg.core", "pkg.ops.add"]]


def test_main_exits_1_and_prints_each_cycle(tmp_path, capsys):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "from . import a\n",
    })
    assert import_cycles.main(["--package", str(pkg)]) == 1
    out = capsys.readouterr().out
    assert "pkg.a -> pkg.b" in out and "pkg.b -> pkg.a" in out


def test_main_exits_0_without_module_level_cycles(tmp_path, capsys):
    pkg = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "def f():\n    from . import a\n",
    })
    assert import_cycles.main(["--package", str(pkg), "--deferred"]) == 0
    out = capsys.readouterr().out
    assert "no import cycles among module-level imports" in out
    assert "pkg.b -> pkg.a" in out

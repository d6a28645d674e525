"""tools/coverage.py: the coverage table of torch's public names that ember has."""

import importlib.util
import pathlib

import pytest

try:
    import torch  # noqa: F401

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="the coverage tool compares with torch")

_PATH = pathlib.Path(__file__).resolve().parents[1] / "tools" / "coverage.py"


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("ember_coverage_tool", _PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_public_names_fft_lists_functions(coverage):
    names = coverage.public_names("fft")
    assert "fft" in names and "rfft" in names and "fftshift" in names


def test_public_names_excludes_foreign_modules(coverage):
    names = coverage.public_names("nn.functional")
    assert "math" not in names and "warnings" not in names and "relu" in names


def test_public_names_excludes_typing_helpers(coverage):
    names = coverage.public_names("nn.functional")
    assert "Optional" not in names and "Callable" not in names
    assert "TYPE_CHECKING" not in coverage.public_names("torch")


def test_public_names_excludes_removed_functions(coverage):
    names = coverage.public_names("torch")
    assert "eig" not in names and "symeig" not in names and "add" in names


def test_public_names_keeps_child_modules(coverage):
    names = coverage.public_names("torch")
    assert "nn" in names and "os" not in names


def test_missing_names_fft_subset_of_public(coverage):
    public = coverage.public_names("fft")
    missing = coverage.missing_names("fft", public)
    assert set(missing) <= set(public)
    assert "fft" not in missing


def test_missing_names_absent_namespace_is_everything(coverage, monkeypatch):
    monkeypatch.setattr(coverage, "_load", lambda ns, root: None if root == "ember" else
                        __import__("torch").fft)
    assert coverage.missing_names("fft", ["fft", "ifft"]) == ["fft", "ifft"]


def test_format_table_markdown_has_total(coverage):
    text = coverage.format_table([("fft", 4, 3), ("Tensor", 10, 5)], markdown=True)
    assert "| `torch.fft` | 4 | 3 | 75% |" in text
    assert "**total** | 14 | 8 | **57%**" in text


def test_main_missing_prints_names(coverage, capsys):
    assert coverage.main(["--missing", "fft"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == coverage.missing_names("fft")


def test_main_table_for_two_namespaces(coverage, capsys):
    assert coverage.main(["--namespaces", "fft,nn.init"]) == 0
    out = capsys.readouterr().out
    assert "fft" in out and "nn.init" in out and "total" in out

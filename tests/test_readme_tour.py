"""The README's short tour runs as written (in a scratch directory)."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_tour_runs(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split("## A short tour", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    env = {}
    exec(compile(code, "README.md", "exec"), env)  # noqa: S102 - the README's own code
    assert (tmp_path / "runs" / "model.pt").exists()  # into the run directory, not the cwd
    assert type(env["ep"]).__name__ == "ExportedProgram"

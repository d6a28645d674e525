"""The three ways to start workers: the launcher, spawn (above), and mpiexec."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.distributed import _workers
from tests.distributed.conftest import load, needs_mpi

SCRIPT = os.path.join(os.path.dirname(__file__), "_train_script.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(cmd):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)


def _check_trained(out_dir):
    results = load(out_dir)
    for r in results:
        for got, want in zip(r["params"], _workers.train_single("ember")):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return results


@needs_mpi
def test_launcher_runs_ddp_script_with_torchrun_env(tmp_path):
    proc = _run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2",
                 "--standalone", SCRIPT, str(tmp_path)])
    assert proc.returncode == 0, proc.stderr
    results = _check_trained(tmp_path)
    envs = [r["env"] for r in results]
    assert [e["RANK"] for e in envs] == ["0", "1"] == [e["LOCAL_RANK"] for e in envs]
    assert all(e["WORLD_SIZE"] == "2" == e["LOCAL_WORLD_SIZE"] for e in envs)
    assert all(e["MASTER_ADDR"] and e["MASTER_PORT"] for e in envs)


@needs_mpi
@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec not on PATH")
def test_mpiexec_runs_ddp_script_without_rank_env(tmp_path):
    proc = _run(["mpiexec", "-n", "2", sys.executable, SCRIPT, str(tmp_path)])
    assert proc.returncode == 0, proc.stderr
    results = _check_trained(tmp_path)
    assert [r["env"]["RANK"] for r in results] == [None, None]
    assert [r["world"] for r in results] == [2, 2]


def test_launcher_stops_others_when_a_worker_fails(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text("import os, sys, time\n"
                      "if os.environ['RANK'] == '1': sys.exit(3)\n"
                      "time.sleep(60)\n")
    proc = _run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2",
                 str(script)])
    assert proc.returncode == 1
    assert "worker rank 1" in proc.stderr and "exit code 3" in proc.stderr


def test_launcher_parses_torchrun_spellings():
    from ember.distributed.run import parse_args

    a = parse_args(["--nproc_per_node", "2", "--master-port=1234", "-m", "pkg.mod", "--x", "1"])
    assert (a.nproc_per_node, a.master_port, a.module, a.training_script) == \
        ("2", 1234, True, "pkg.mod")
    assert a.training_script_args == ["--x", "1"]


def test_launcher_reports_the_exception_a_recorded_worker_raised(tmp_path):
    import ember.distributed.elastic.multiprocessing.errors as errors

    script = tmp_path / "boom.py"
    # the errors module by path (it needs only the standard library): no ember import to wait
    script.write_text("import importlib.util as u, os, sys, time\n"
                      f"spec = u.spec_from_file_location('errors', {errors.__file__!r})\n"
                      "errors = sys.modules['errors'] = u.module_from_spec(spec)\n"
                      "spec.loader.exec_module(errors)\n"
                      "@errors.record\n"
                      "def main():\n"
                      "    if os.environ['RANK'] == '1': raise ValueError('boom')\n"
                      "    time.sleep(60)\n"
                      "main()\n")
    proc = _run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node=2",
                 str(script)])
    assert proc.returncode == 1
    assert "worker rank 1" in proc.stderr and "exit code 1: ValueError: boom" in proc.stderr


def test_record_writes_torch_error_file_layout(tmp_path, monkeypatch):
    import json

    from ember.distributed.elastic.multiprocessing.errors import record

    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(tmp_path / "err.json"))

    @record
    def main():
        raise KeyError("k")

    with pytest.raises(KeyError):
        main()
    data = json.loads((tmp_path / "err.json").read_text())["message"]
    assert data["message"] == "KeyError: 'k'"
    assert "raise KeyError" in data["extraInfo"]["py_callstack"]


def test_record_returns_none_on_clean_system_exit():
    from ember.distributed.elastic.multiprocessing.errors import record

    assert record(lambda: (_ for _ in ()).throw(SystemExit(0)))() is None

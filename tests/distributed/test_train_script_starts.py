"""Issue 21's "Done means": the torchrun-style DDP script (tests/distributed/_train_script.py)
run alone and started by ``mp.spawn`` trains as the single-process full batch (the launcher
and mpiexec starts are in test_launch.py)."""

import os
import subprocess
import sys

import numpy as np

import ember.multiprocessing as mp
from tests.distributed import _train_script, _workers
from tests.distributed.conftest import free_port, load, needs_mpi

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _check(results):
    for r in results:
        for got, want in zip(r["params"], _workers.train_single("ember")):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ddp_script_alone_trains_as_the_full_batch(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "PMI_RANK")}
    env["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, _train_script.__file__, str(tmp_path)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import pickle

    with open(tmp_path / "rank0.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["world"] == 1
    _check([result])


def _spawned(rank, port, out_dir):
    # what a tutorial's mp.spawn target sets before calling the script's main unchanged
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                      LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    _train_script.main(out_dir)


@needs_mpi
def test_ddp_script_main_under_mp_spawn_trains_as_the_full_batch(tmp_path):
    mp.spawn(_spawned, args=(free_port(), str(tmp_path)), nprocs=2)
    results = load(str(tmp_path))
    assert [r["world"] for r in results] == [2, 2]
    _check(results)

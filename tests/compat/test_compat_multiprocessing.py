"""Multiprocessing under the ``torch`` alias (``python -m ember.compat.run``): spawn and
forkserver children re-install the alias and receive tensors intact, in shared memory."""

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    import torch.multiprocessing as mp

    def rank_fn(rank, q):
        q.put((rank, torch.__name__, (torch.ones(2) * (rank + 1)).tolist()))

    def square(x):
        return (x * x).sum().item()

    def child(qin, qout, done):
        t = qin.get()
        qout.put((torch.__name__, t.tolist()))
        t.add_(1)  # shared memory: the parent sees this write
        qout.put("written")
        done.wait(120)

    if __name__ == "__main__":
        method = sys.argv[1]
        ctx = mp.get_context(method)
        q = ctx.Queue()
        mp.start_processes(rank_fn, args=(q,), nprocs=2, start_method=method)
        print("ranks", sorted(q.get(timeout=120) for _ in range(2)))
        with ctx.Pool(1) as pool:
            print("pool", pool.map(square, [torch.tensor([1., 2.]), torch.tensor([3.])]))
        qin, qout, done = ctx.Queue(), ctx.Queue(), ctx.Event()
        p = ctx.Process(target=child, args=(qin, qout, done))
        p.start()
        t = torch.arange(3.)
        qin.put(t)
        print("child", qout.get(timeout=120), qout.get(timeout=120), t.tolist())
        done.set()
        p.join(120)
        print("exit", p.exitcode, torch.__name__)
""")

EXPECTED = [
    "ranks [(0, 'ember', [1.0, 1.0]), (1, 'ember', [2.0, 2.0])]",
    "pool [5.0, 9.0]",
    "child ('ember', [0.0, 1.0, 2.0]) written [1.0, 2.0, 3.0]",
    "exit 0 ember",
]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_compat_run_multiprocessing_children_get_the_alias(method, tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(SCRIPT)
    # five processes each import ember (and the pool's and child's waits): minutes when the
    # machine is loaded, so the limits only tell a hang from a slow start
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script), method],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines() == EXPECTED, r.stdout + r.stderr[-3000:]

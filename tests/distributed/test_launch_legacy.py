"""``python -m ember.distributed.launch``: torch.distributed.launch's argument passing."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = """
import os, sys
with open(os.path.join(sys.argv[-1], "rank" + os.environ["LOCAL_RANK"]), "w") as f:
    f.write(repr(sys.argv[1:-1]))
"""


def _launch(tmp_path, *flags):
    script = tmp_path / "s.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "ember.distributed.launch", *flags,
                        "--nproc-per-node", "2", str(script), "--lr", "1", str(tmp_path)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r, [(tmp_path / f"rank{i}").read_text() for i in range(2)]


def test_local_rank_argument_and_deprecation_warning(tmp_path):
    r, argv = _launch(tmp_path)
    assert argv == ["['--local-rank=0', '--lr', '1']", "['--local-rank=1', '--lr', '1']"]
    assert "FutureWarning" in r.stderr and "deprecated" in r.stderr


def test_use_env_passes_no_argument(tmp_path):
    _, argv = _launch(tmp_path, "--use-env")
    assert argv == ["['--lr', '1']", "['--lr', '1']"]

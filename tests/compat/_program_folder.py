"""Running a folder of whole programs on PyTorch and under ``python -m ember.compat.run`` and
comparing what they print: the machinery of tests/compat/test_research_repos_5.py and _6.py.

Each folder holds ``<name>.py`` programs and ``<name>.expected`` (what PyTorch printed when
recorded). A test file makes its suite with ``Folder("research_6")`` and asks it for the runs
(``run_all``), the comparison (``assert_same_printout``), its tests (``tests``) and the
recording (``record``).
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
NUM = re.compile(r"-?\d+\.\d+(?:e[-+]?\d+)?")  # a printed float
_GROUPS = 2
_TIMEOUT = 400

# runs its share of the programs one after another in one process, each as ``__main__`` in a
# fresh folder (PyTorch's through runpy, ember's through the runner's own entry point), and
# writes name -> [exit status, stdout, stderr's tail] as JSON
_DRIVER = """
import contextlib, io, json, os, runpy, sys, tempfile, traceback
under_ember = sys.argv[1] == "ember"
if under_ember:
    import ember.compat.run as runner
results = {}
for path in json.loads(sys.argv[3]):
    out, err, rc = io.StringIO(), io.StringIO(), 0
    saved_argv, saved_path, cwd = list(sys.argv), list(sys.path), os.getcwd()
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if under_ember:
                    runner.main([path])
                else:
                    sys.argv = [path]
                    sys.path.insert(0, os.path.dirname(path))
                    runpy.run_path(path, run_name="__main__")
            except SystemExit as e:
                rc = e.code or 0
            except BaseException:
                traceback.print_exc()
                rc = 1
        os.chdir(cwd)
    sys.argv[:], sys.path[:] = saved_argv, saved_path
    # process-wide settings a program may change go back to their defaults for the next
    fw = sys.modules.get("ember" if under_ember else "torch")
    if fw is not None:
        fw.set_default_dtype(fw.float32)
        fw.set_printoptions(profile="default")
    results[os.path.basename(path)[:-3]] = [rc, out.getvalue(), err.getvalue()[-4000:]]
with open(sys.argv[2], "w") as f:
    json.dump(results, f)
"""


def has_torch():
    """Whether PyTorch is importable here."""
    return importlib.util.find_spec("torch") is not None


def assert_same_printout(got, want, name, rtol=1e-4):
    """The printed text equal with its floats masked, the floats to a relative ``rtol``."""
    mask = [NUM.sub("#", ln) for ln in got.splitlines()]
    assert mask == [NUM.sub("#", ln) for ln in want.splitlines()], name
    np.testing.assert_allclose([float(x) for x in NUM.findall(got)],
                               [float(x) for x in NUM.findall(want)], rtol=rtol, atol=1e-5,
                               err_msg=name)


# NOTE [ Thread count of the program runs ]
# The programs run with OMP_NUM_THREADS=1, as CI runs them, unless EMBER_PROGRAM_THREADS
# says otherwise (a count, or "default" for the machine's own): a product or convolution
# may take another path at another thread count, and one program (research_7's
# gradcam_hooks) once printed differently only at one thread. Running every folder at both
# settings on every CI run would double its time for little: at session 30 every program
# of research_5 to research_8 printed the same at both settings but research_5's
# checkpoint_amp, whose bfloat16 autocast gradients round differently by thread count on
# PyTorch too (and identically on ember), so against PyTorch run alongside it agrees at
# either setting; only its ``.expected`` (recorded at one thread) is thread-bound.
# ``EMBER_PROGRAM_THREADS=default pytest tests/compat/test_research_repos_*.py`` checks
# the other setting on demand.

# a program may widen its comparison with a line ``# printout rtol: <number>`` (and say
# why beside it): one whose printed values carry rounding amplified by its own arithmetic
_RTOL_LINE = re.compile(r"^# printout rtol: ([0-9.eE+-]+)", re.M)


class Folder:
    """The programs of ``tests/compat/programs/<name>/``.

    Args:
        name: the folder's name.
    """

    def __init__(self, name):
        self.name = name
        self.here = Path(__file__).parent / "programs" / name
        self.programs = sorted(p.stem for p in self.here.glob("*.py"))

    def run_all(self, tmp, sides):
        """Runs every program on each side in ``sides`` ("torch", "ember"), ``_GROUPS``
        processes a side, all at once; side -> name -> [status, stdout, stderr]."""
        env = dict(os.environ, PYTHONWARNINGS="ignore",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                            os.environ.get("PYTHONPATH")])))
        threads = os.environ.get("EMBER_PROGRAM_THREADS", "1")
        if threads == "default":
            env.pop("OMP_NUM_THREADS", None)
        else:
            env["OMP_NUM_THREADS"] = threads
        procs = []
        for side in sides:
            for g in range(_GROUPS):
                share = [str(self.here / f"{n}.py") for n in self.programs[g::_GROUPS]]
                result = tmp / f"{side}_{g}.json"
                procs.append((side, result, subprocess.Popen(
                    [sys.executable, "-c", _DRIVER, side, str(result), json.dumps(share)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp, env=env)))
        results = {side: {} for side in sides}
        try:
            for side, result, proc in procs:
                try:
                    _, err = proc.communicate(timeout=_TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    _, err = proc.communicate()
                assert proc.returncode == 0, f"{side} driver:\n{err[-3000:]}"
                results[side].update(json.loads(result.read_text()))
        finally:
            for _, _, proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        return results

    def expected(self, name):
        """What PyTorch printed for program ``name`` when it was recorded."""
        return (self.here / f"{name}.expected").read_text()

    def tests(self):
        """The module-scoped ``runs`` fixture and the two tests of the folder, for a test file
        to bind at module level under these names:

        ``runs, test_program_prints_what_torch_prints,
        test_every_program_has_its_recorded_output = FOLDER.tests()``
        """
        folder = self

        @pytest.fixture(scope="module")
        def runs(tmp_path_factory):
            """side -> program -> [status, stdout, stderr]; PyTorch's side only where
            installed."""
            sides = ("torch", "ember") if has_torch() else ("ember",)
            return folder.run_all(tmp_path_factory.mktemp(folder.name), sides)

        @pytest.mark.parametrize("name", folder.programs)
        def test_program_prints_what_torch_prints(name, runs):
            rc, out, err = runs["ember"][name]
            assert rc == 0, f"{name} failed under ember:\n{err}"
            if "torch" in runs:
                t_rc, t_out, t_err = runs["torch"][name]
                assert t_rc == 0, f"{name} failed on PyTorch:\n{t_err}"
                want = t_out
            else:
                want = folder.expected(name)
            assert out.strip(), name
            m = _RTOL_LINE.search((folder.here / f"{name}.py").read_text())
            assert_same_printout(out, want, name, float(m.group(1)) if m else 1e-4)

        def test_every_program_has_its_recorded_output():
            assert len(folder.programs) >= 10
            assert all((folder.here / f"{n}.expected").exists() for n in folder.programs)

        return runs, test_program_prints_what_torch_prints, \
            test_every_program_has_its_recorded_output

    def record(self):
        """Run every program on PyTorch and write its printout as ``<name>.expected``."""
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            recorded = self.run_all(Path(d), ("torch",))["torch"]
        for n, (status, printed, stderr) in recorded.items():
            assert status == 0, f"{n}:\n{stderr}"
            (self.here / f"{n}.expected").write_text(printed)
            print("recorded", n)

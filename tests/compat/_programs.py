"""What the research-program tests share: the driver prelude that records parameters and
gradients, and the comparison of the two runs' saved arrays.

Each ``test_research_repos*.py`` writes one driver script, runs it once on PyTorch and once
under ``python -m ember.compat.run``, and loads the ``.npz`` each run saved.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np

#: the driver's opening lines: ``out`` (what the run saves) and the helpers that fill it
DRIVER_PRELUDE = textwrap.dedent("""
    out = {}


    def params(prefix, module, skip=()):
        for n, p in module.named_parameters():
            if not any(s in n for s in skip):
                out[f"{prefix}_p_{n}"] = p.detach().numpy()


    def grads(prefix, module, skip=()):
        for n, p in module.named_parameters():
            if p.grad is not None and not any(s in n for s in skip):
                out[f"{prefix}_g_{n}"] = p.grad.numpy()
    """)


def driver_source(body):
    """A driver's text: the prelude (``out``, ``params``, ``grads``), then ``body``
    dedented (a triple-quoted string indented in its test file).

    Args:
        body (str): the driver's own code.

    Returns:
        str: the script to run.
    """
    return DRIVER_PRELUDE + textwrap.dedent(body)


def assert_runs_match(torch_run, ember_run, expected, atol=2e-5):
    """The two runs saved the same keys (at least ``expected`` of them) and equal arrays:
    floating ones to ``rtol=1e-4`` with an absolute tolerance that scales with the array's
    largest entry (float32 gradients are sums of many terms: CLIP's positional-embedding
    gradients reach ~1e2), the others exactly.

    Args:
        torch_run (dict): name -> array, as PyTorch's run saved them.
        ember_run (dict): the same from ember's run.
        expected (int): the fewest keys a complete run saves.
        atol (float): the absolute tolerance per unit of an array's largest entry.
    """
    t, e = torch_run, ember_run
    assert sorted(t) == sorted(e) and len(t) >= expected
    for key in t:
        if t[key].dtype.kind in "fc":
            scale = max(1.0, float(np.abs(t[key]).max())) if t[key].size else 1.0
            np.testing.assert_allclose(e[key], t[key], rtol=1e-4, atol=atol * scale,
                                       err_msg=key)
        else:
            np.testing.assert_array_equal(e[key], t[key], err_msg=key)


def run_both(tmp_path, driver, args, path, **env):
    """Run the driver script ``driver`` once on PyTorch and once under ``python -m
    ember.compat.run``, side by side (one CPU each), each in its own directory under
    ``tmp_path``; each run saves ``<tmp_path>/<name>.npz``, whose path is its first argument.

    Args:
        tmp_path (Path): the test's scratch directory.
        driver (Path): the script to run.
        args (list): the script's further arguments.
        path (list): directories to put before ``PYTHONPATH``.
        **env: further environment variables (``OMP_NUM_THREADS=1`` and quiet warnings are
            set already).

    Returns:
        list: [PyTorch's arrays, ember's arrays], each a dict.

    Example::

        >>> run_both(tmp_path, tmp_path / "driver.py", ["gan"], [ROOT])  # doctest: +SKIP
    """
    path = [*map(str, path), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), PYTHONWARNINGS="ignore",
               OMP_NUM_THREADS="1", **env)
    procs = {}
    for name, prefix in (("torch", []), ("ember", ["-m", "ember.compat.run"])):
        cwd = tmp_path / name
        cwd.mkdir()
        procs[name] = subprocess.Popen(
            [sys.executable, *prefix, str(driver), str(tmp_path / f"{name}.npz"),
             *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=cwd, env=env)
    results = []
    try:
        for name, proc in procs.items():
            try:
                _, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            assert proc.returncode == 0, f"{name}:\n{err[-4000:]}"
            results.append(dict(np.load(tmp_path / f"{name}.npz")))
    finally:
        for proc in procs.values():  # the other run, when one failed
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results

"""Every CUDA C source ember compiles with NVRTC on a GPU compiles with nvcc here (no GPU
needed): tools/check_cuda_source.py. Skipped where the CUDA toolkit is not installed."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs the CUDA toolkit's nvcc")
def test_cuda_kernel_sources_compile():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "check_cuda_source.py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FAIL" not in r.stdout and r.stdout.count("ok") >= 3

"""Compile ember's CUDA C sources with nvcc, on a machine without a GPU.

The fused CUDA kernels (ember/_kernels/_cuda.py, the fused optimizers, ...) are compiled by
NVRTC on first use on a GPU machine; a syntax error there only shows up when a GPU is lent.
This tool compiles the same sources with the CUDA toolkit's ``nvcc`` (which needs no GPU),
instantiating every templated kernel the module asks NVRTC for, so a CPU-only session can
check its kernel edits before spending device time.

Usage::

    python tools/check_cuda_source.py            # every source, for sm_90 (H100/H200)
    python tools/check_cuda_source.py --arch sm_80

Exits non-zero, printing nvcc's messages, when a source does not compile.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


def sources():
    """(name, CUDA source, name expressions) of each module ember compiles with NVRTC."""
    from ember._kernels import _cuda

    out = [("ember/_kernels/_cuda.py", _cuda._SOURCE,
            [f"{n}<{k}>" for n in _cuda._NAMES for k in _cuda._KINDS.values()])]
    from ember.optim import _fused_cuda

    out.append(("ember/optim/_fused_cuda.py (multi-tensor steps)", _fused_cuda._MULTI_SOURCE,
                []))
    extra = getattr(_cuda, "_EXTRA_MODULES", ())
    for name, src, exprs in extra:
        out.append((name, src, list(exprs)))
    return out


def _instantiations(exprs):
    """Explicit instantiations of templated kernels named ``f<T>``: nvcc compiles a
    template only where it is used."""
    lines = []
    for e in exprs:
        m = re.fullmatch(r"(\w+)<([\w, ]+)>", e)
        if m:
            lines.append(f"template __global__ decltype({e}) {e};")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", default="sm_90")
    args = p.parse_args(argv)
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        print("nvcc not found: install the CUDA toolkit to check kernel sources")
        return 2
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, src, exprs in sources():
            path = os.path.join(tmp, "k.cu")
            with open(path, "w") as f:
                f.write(src + "\n" + _instantiations(exprs) + "\n")
            r = subprocess.run([nvcc, "--std=c++14", f"-arch={args.arch}", "-c", path, "-o",
                                os.path.join(tmp, "k.o")], capture_output=True, text=True)
            ok = r.returncode == 0
            print(f"{'ok  ' if ok else 'FAIL'} {name} ({len(exprs)} kernels)")
            if not ok:
                failed += 1
                print(r.stderr[-4000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Group ``io``: save and load of a ~100 MB state_dict, ember vs PyTorch."""

from __future__ import annotations

import os
import tempfile

import numpy as np

from bench.common import workload


def _state_dict(fw):
    rng = np.random.default_rng(0)
    # 25 float32 tensors of 1M elements (~100 MB)
    return {f"layer{i}.weight": fw.from_numpy(rng.standard_normal((1024, 1024))
                                              .astype(np.float32)) for i in range(25)}


@workload("io", "save a 100 MB state_dict", check=None)
def save(fw):
    sd = _state_dict(fw)
    path = os.path.join(tempfile.mkdtemp(), "ck.pt")
    return lambda: fw.save(sd, path)


@workload("io", "load a 100 MB state_dict", check=None)
def load(fw):
    sd = _state_dict(fw)
    path = os.path.join(tempfile.mkdtemp(), "ck.pt")
    fw.save(sd, path)
    return lambda: fw.load(path, weights_only=True)

"""karpathy/build-nanogpt's ``train_gpt2.py`` on two processes (issue 21, session 16): started
by the launcher (``python -m ember.distributed.run --standalone --nproc-per-node 2``, as
torchrun starts it), its DDP branch taken from the environment; compared with PyTorch's
torchrun where it is installed. Program, data and helpers as in
``tests/test_programs_session16.py``; the two ranks' printed lines are read line-free (their
writes may interleave).
"""

import numpy as np
import pytest

from tests.conftest import HAS_TORCH
from tests.distributed.conftest import needs_mpi
from tests.test_programs_session15 import command, run
from tests.test_programs_session16 import (
    assert_build_nanogpt_close,
    build_nanogpt_env,
    build_nanogpt_report,
    build_nanogpt_workdir,
)

pytestmark = needs_mpi

_STANDALONE = ["--standalone", "--nproc-per-node", "2"]


def test_build_nanogpt_two_ranks(tmp_path):
    root = build_nanogpt_workdir(tmp_path, "ember")
    out = run(command("ember", "train_gpt2.py", launcher=_STANDALONE), cwd=root,
              timeout=600, **build_nanogpt_env())
    mine = build_nanogpt_report(out)
    # each rank takes one micro-batch of the global batch: no gradient accumulation
    assert "=> calculated gradient accumulation steps: 1" in out
    assert [s[0] for s in mine["steps"]] == [0, 1, 2] and len(mine["val"]) == 2
    assert mine["steps"][0][1] == pytest.approx(np.log(50304), abs=0.1)
    # the accuracy's counts are all-reduced over the ranks; each rank samples
    assert mine["hella"] == [("1", "3"), ("1", "3")]
    assert mine["samples"] == [(r, str(i)) for r in "01" for i in range(4)]
    if HAS_TORCH:
        theirs_root = build_nanogpt_workdir(tmp_path, "torch")
        theirs = run(command("torch", "train_gpt2.py", launcher=_STANDALONE),
                     cwd=theirs_root, timeout=600, **build_nanogpt_env())
        assert_build_nanogpt_close(mine, build_nanogpt_report(theirs))

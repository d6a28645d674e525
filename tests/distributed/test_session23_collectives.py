"""Collectives that the random comparison with PyTorch's gloo found wrong, on 2 processes:
reductions that complex numbers do not define are refused as PyTorch refuses them (not
with a bare MPI error), and a work whose future was waited on says it is completed (see
NOTE [ PyTorch's gloo as the oracle ] in ``_random_collective_workers.py`` for where
PyTorch's own answers are at fault).
"""

import datetime

import numpy as np
import pytest

from tests.distributed import _session23_workers
from tests.distributed.conftest import free_port, needs_mpi, spawn2

pytest.importorskip("torch")


def _refusals_in_a_world_of_one(torch):
    dist = torch.distributed
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1, timeout=datetime.timedelta(seconds=30))
    try:
        got = {}
        for op in ("MAX", "PRODUCT", "BXOR", "SUM"):
            o = getattr(dist.ReduceOp, op)
            for name, call in (
                    ("all_reduce", lambda t, o=o: dist.all_reduce(t, op=o)),
                    ("reduce", lambda t, o=o: dist.reduce(t, dst=0, op=o)),
                    ("reduce_scatter_tensor", lambda t, o=o: dist.reduce_scatter_tensor(
                        torch.zeros(2, dtype=t.dtype), t, op=o))):
                t = torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64)
                got[name, op] = _session23_workers._outcome(lambda: call(t))[0]
        return got
    finally:
        dist.destroy_process_group()


def test_complex_refusals_in_a_world_of_one_as_torch():
    # (a group of one runs without mpi4py too: NOTE [ A world of one ])
    import torch

    import ember

    assert _refusals_in_a_world_of_one(ember) == _refusals_in_a_world_of_one(torch)


@pytest.fixture(scope="module")
def complex_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s23_complex")
    fn = _session23_workers.complex_reductions
    return spawn2(tmp, fn, "ember"), spawn2(tmp, fn, "torch")


@pytest.fixture(scope="module")
def completion_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("s23_completion")
    fn = _session23_workers.completion
    return spawn2(tmp, fn, "ember"), spawn2(tmp, fn, "torch")


def _same_outcome(ours, theirs):
    if ours[0] != theirs[0] or ours[0] != "ok":
        return ours[0] == theirs[0]
    a, b = ours[1], theirs[1]
    return (a is None and b is None) or (a is not None and b is not None and a.dtype == b.dtype
                                         and np.allclose(a, b))


@needs_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_complex_reductions_refused_as_torch_gloo(complex_runs, rank):
    ours, theirs = complex_runs[0][rank], complex_runs[1][rank]
    assert ours.keys() == theirs.keys()
    bad = {k: (ours[k][0], theirs[k][0]) for k in ours
           if k != "after" and not _same_outcome(ours[k], theirs[k])}
    assert not bad, bad
    # the refusals are ValueError for all_reduce, RuntimeError for the others
    assert ours["all_reduce", "MAX"] == ("ValueError",)
    assert ours["reduce_scatter", "MIN"] == ("RuntimeError",)
    assert ours["reduce", "SUM"][0] == "ok"


@needs_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_complex_refusal_leaves_group_usable(complex_runs, rank):
    ours, theirs = complex_runs[0][rank], complex_runs[1][rank]
    np.testing.assert_allclose(ours["after"], theirs["after"])


@needs_mpi
@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("kind", ["all_reduce", "broadcast", "all_gather", "all_to_all",
                                  "scatter"])
def test_work_completed_once_its_future_was_waited_on(completion_runs, rank, kind):
    ours, theirs = completion_runs[0][rank][kind], completion_runs[1][rank][kind]
    assert theirs == [True] * 20  # PyTorch's, once its race settled
    assert ours == [True] * 20  # ember's, read at once


@needs_mpi
@pytest.mark.parametrize("rank", [0, 1])
@pytest.mark.parametrize("kind", ["reduce_scatter", "reduce_scatter_tensor"])
def test_reduce_scatter_future_holds_torch_values(completion_runs, rank, kind):
    out, done, holds_out = completion_runs[0][rank][kind]
    np.testing.assert_array_equal(out, completion_runs[1][rank][kind][0])
    assert done is True and holds_out is True

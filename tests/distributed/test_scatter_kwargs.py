"""nn.parallel.scatter / scatter_kwargs and DistributedDataParallel.scatter against torch."""

import collections

import pytest

import ember
import ember.distributed as dist
import ember.nn.parallel.scatter_gather as sg
from tests.distributed.conftest import free_port, needs_mpi

torch = pytest.importorskip("torch")
tsg = pytest.importorskip("torch.nn.parallel.scatter_gather")

Pair = collections.namedtuple("Pair", "a b")

CASES = [((3, "s"), [0, 1]), ([1, [2, 3]], [0, 1, 2]), ({"a": 1, "b": (2,)}, [0]),
         ((), [0]), ([], [0, 1]), ({}, [0]), (5, []), ((Pair(1, 2),), [0, 1])]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_scatter_of_non_tensors_matches_torch(i):
    assert sg.scatter(*CASES[i]) == tsg.scatter(*CASES[i])


@pytest.mark.parametrize("args", [((3,), {"a": 1}, [0, 1]), ((), {"a": 1}, [0, 1]),
                                  ((1, 2), {}, [0]), ((), {}, [0])])
def test_scatter_kwargs_pads_to_the_same_count_as_torch(args):
    assert sg.scatter_kwargs(*args) == tsg.scatter_kwargs(*args)


@pytest.mark.skipif(ember.cuda.is_available(), reason="checks the CPU-only refusal")
def test_scatter_of_cpu_tensor_without_cuda_raises_assertion_error():
    with pytest.raises(AssertionError, match="CPU tensors"):
        sg.scatter((ember.ones(4),), [0])


@needs_mpi
def test_ddp_scatter_splits_arguments_as_scatter_kwargs():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    try:
        ddp = ember.nn.parallel.DistributedDataParallel(ember.nn.Linear(2, 2))
        assert ddp.scatter((3,), {"a": 1}, [0, 1]) == (((3,), (3,)), ({"a": 1}, {"a": 1}))
    finally:
        dist.destroy_process_group()

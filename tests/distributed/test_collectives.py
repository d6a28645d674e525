"""Collectives in 2 processes: ember over MPI against PyTorch's gloo, same inputs."""

import numpy as np
import pytest

from tests.distributed import _workers
from tests.distributed.conftest import needs_mpi, spawn2

try:
    import torch  # noqa: F401

    HAS_TORCH = True
except ImportError:
    HAS_TORCH = False

pytestmark = [needs_mpi, pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")]

NAMES = [
    "all_reduce_SUM", "all_reduce_PRODUCT", "all_reduce_MIN", "all_reduce_MAX", "all_reduce_AVG",
    "all_reduce_int_SUM", "all_reduce_int_BAND", "all_reduce_int_BOR", "all_reduce_int_BXOR",
    "all_reduce_int_MAX", "all_reduce_bool", "all_reduce_bf16", "all_reduce_noncontiguous",
    "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single",
    "send_recv", "broadcast_object_list", "all_gather_object", "async_all_reduce",
    "async_completed", "rank", "world_size", "backend", "new_group_rank",
    "initialized_after_destroy", "object_p2p", "all_reduce_coalesced", "subgroups", "device_mesh",
    "all_to_all_single_uneven", "gather_object", "scatter_object_list",
]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("collectives")
    return (spawn2(tmp, _workers.collectives, "ember"),
            spawn2(tmp, _workers.collectives, "torch"))


def _same(a, b):
    if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("name", NAMES)
def test_collective_matches_gloo(results, name):
    ours, theirs = results
    for rank in range(2):
        assert _same(ours[rank][name], theirs[rank][name]), (rank, ours[rank][name],
                                                             theirs[rank][name])


def test_collective_reduce_matches_gloo_on_dst(results):
    ours, theirs = results
    assert _same(ours[0]["reduce"], theirs[0]["reduce"])


def test_collective_recv_returns_sender(results):
    assert results[0][1]["recv_src"] == results[1][1]["recv_src"] == 0


# -- subgroups (tests/distributed/_subgroup_workers.py) -----------------------------------------

@pytest.mark.parametrize("name", [
    "by_enumeration", "of_group", "whole_world", "inside_subgroup", "err_duplicate",
    "err_empty", "err_too_big", "err_exceeds_world", "err_zero", "err_split_empty",
    "err_exceeds_subgroup", "err_not_member"])
def test_subgroups_match_gloo(results, name):
    ours, theirs = results
    for rank in range(2):
        assert ours[rank].get("sub_" + name) == theirs[rank].get("sub_" + name), (
            rank, ours[rank].get("sub_" + name), theirs[rank].get("sub_" + name))


def test_new_subgroups_inside_subgroup_made_by_members_only(results):
    ours, _ = results
    assert ours[1]["sub_inside_subgroup"] == (0, 1, [1], [2.0], ["member"])
    assert "sub_inside_subgroup" not in ours[0]


def test_split_group_splits_by_parent_ranks(results):
    ours, _ = results
    assert ours[0]["sub_split"] == (0, 1, [0], [1.0], [])
    assert ours[1]["sub_split"] == (0, 1, [1], [2.0], [])


def test_split_group_duplicate_ranks_raise(results):
    ours, _ = results
    assert ours[0]["sub_split_err_duplicate"] == ("ValueError",
                                                  "the split group cannot have duplicate ranks")

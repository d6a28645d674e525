"""Subgroup checks, run inside ``_workers.collectives`` (the same code under PyTorch's gloo
and under ember).

Groups made by some processes only come last: PyTorch names groups by a per-process
counter, so every later group would disagree between the ranks.
"""


def _error(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the type and message are the result
        return type(e).__name__, str(e)
    return None


def _describe(dist, torch, rank, mine, groups):
    """Rank and size in this rank's subgroup, an all-reduce in it, who holds which group."""
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t, group=mine)
    held = ["member" if g != dist.GroupMember.NON_GROUP_MEMBER else "non_member"
            for g in groups]
    return (dist.get_rank(mine), dist.get_world_size(mine),
            dist.get_process_group_ranks(mine), t.tolist(), held)


def results(torch, dist, fw, rank):
    """new_subgroups / new_subgroups_by_enumeration / split_group results and errors, by
    name (run last before destroying the group: see the module's docstring)."""
    res = {}
    res["by_enumeration"] = _describe(dist, torch, rank,
                                      *dist.new_subgroups_by_enumeration([[1], [0]]))
    world = dist.new_group([0, 1])
    res["of_group"] = _describe(dist, torch, rank, *dist.new_subgroups(1, group=world))
    res["whole_world"] = _describe(dist, torch, rank, *dist.new_subgroups(2))
    res["err_duplicate"] = _error(dist.new_subgroups_by_enumeration, [[0, 1], [1]])
    res["err_empty"] = _error(dist.new_subgroups_by_enumeration, [])
    res["err_too_big"] = _error(dist.new_subgroups, 3, group=world)
    res["err_exceeds_world"] = _error(dist.new_subgroups, 3)
    res["err_zero"] = _error(dist.new_subgroups, 0)
    res["err_split_empty"] = _error(dist.split_group, split_ranks=[])
    if fw == "ember":  # PyTorch's gloo groups refuse to split (ember's split)
        res["split"] = _describe(dist, torch, rank, dist.split_group(split_ranks=[[1], [0]]),
                                 [])
        res["split_err_duplicate"] = _error(dist.split_group, split_ranks=[[0, 0]])
    # a group that only rank 1 makes, then split by its only member
    if rank == 1:
        alone = dist.new_group([1])
        res["inside_subgroup"] = _describe(dist, torch, rank,
                                           *dist.new_subgroups(1, group=alone))
        res["err_exceeds_subgroup"] = _error(dist.new_subgroups, 2, group=alone)
    else:
        res["err_not_member"] = _error(dist.new_subgroups, 1,
                                       group=dist.GroupMember.NON_GROUP_MEMBER)
    return {"sub_" + k: v for k, v in res.items()}

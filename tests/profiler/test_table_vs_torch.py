"""``key_averages().table()`` prints what PyTorch's own table code prints for the same
averages (its ``_build_table`` runs on ember's events)."""

import pytest

import ember


@pytest.mark.parametrize("group", [{}, {"group_by_input_shape": True}, {"group_by_stack_n": 2}])
@pytest.mark.parametrize("sort_by", [None, "cpu_time_total", "self_cpu_memory_usage"])
def test_cpu_table_as_torch_formats_it(group, sort_by):
    # PyTorch's own table code, on ember's averages of a CPU profile, prints ember's table
    profiler_util = pytest.importorskip("torch.autograd.profiler_util")
    x = ember.randn(8, 8, requires_grad=True)
    with ember.profiler.profile(record_shapes=True, profile_memory=True,
                                with_stack=True) as prof:
        with ember.profiler.record_function("a_block_with_a_name_long_enough_to_be_cut__"):
            ((x @ x).relu() + 1).sum().backward()
    averages = prof.key_averages(**group)
    mine = averages.table(sort_by=sort_by, row_limit=6, max_src_column_width=12)
    for a in averages:
        a.device_type = getattr(profiler_util.DeviceType, a.device_type.name)
    assert mine == profiler_util._build_table(averages, sort_by=sort_by, row_limit=6,
                                              max_src_column_width=12, profile_memory=True)


def test_key_averages_sums_match_event_properties():
    # the quick sum of a CPU profile gives what the events' own properties add up to
    x = ember.randn(8, 8, requires_grad=True)
    with ember.profiler.profile(profile_memory=True) as prof:
        with ember.profiler.record_function("block"):
            ((x @ x).relu() + 1).sum().backward()
    fields = ["cpu_time_total", "self_cpu_time_total", "cpu_memory_usage",
              "self_cpu_memory_usage", "device_time_total", "count"]
    for avg in prof.key_averages():
        events = [e for e in prof.events() if e.key == avg.key]
        expected = [sum(getattr(e, f) for e in events) for f in fields]
        assert [getattr(avg, f) for f in fields] == pytest.approx(expected)

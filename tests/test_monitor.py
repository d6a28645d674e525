"""ember.monitor: events, handlers and windowed Stats, compared with torch.monitor."""

from __future__ import annotations

import datetime
import doctest
import time

import pytest

import ember
import ember.monitor

torch = pytest.importorskip("torch")

WINDOW = datetime.timedelta(milliseconds=200)


def _run(lib):
    """Two windows of values through a Stat; the events logged and what get() returns."""
    mon = lib.monitor
    events = []
    handle = mon.register_event_handler(events.append)
    aggs = [mon.Aggregation.SUM, mon.Aggregation.MEAN, mon.Aggregation.COUNT,
            mon.Aggregation.MAX, mon.Aggregation.MIN, mon.Aggregation.VALUE]
    stat = mon.Stat("foo", aggs, WINDOW)
    before = stat.get()
    for v in (1.0, 2.0, 6.0):
        stat.add(v)
    counted = stat.count
    time.sleep(0.25)
    stat.add(10.0)
    after = stat.get()
    mon.unregister_event_handler(handle)
    to_names = lambda d: {a.name: v for a, v in d.items()}  # noqa: E731
    return (to_names(before), counted, to_names(after),
            [(e.name, e.data) for e in events])


def test_stat_windows_match_torch():
    assert _run(ember) == _run(torch)


def test_stat_logs_remaining_values_when_deleted():
    events = []
    handle = ember.monitor.register_event_handler(events.append)
    stat = ember.monitor.Stat("left", [ember.monitor.Aggregation.SUM],
                              datetime.timedelta(seconds=60))
    stat.add(2.0)
    stat.add(3.0)
    del stat
    ember.monitor.unregister_event_handler(handle)
    assert [(e.name, e.data) for e in events] == [("torch.monitor.Stat", {"left.sum": 5.0})]


def test_stat_max_samples_drops_extra_values():
    events = []
    handle = ember.monitor.register_event_handler(events.append)
    stat = ember.monitor.Stat("cap", [ember.monitor.Aggregation.SUM],
                              datetime.timedelta(seconds=60), 2)
    for v in (1.0, 2.0, 3.0):
        stat.add(v)
    del stat
    ember.monitor.unregister_event_handler(handle)
    assert events[-1].data == {"cap.sum": 3.0}


def test_log_event_reaches_handlers_until_unregistered():
    seen = []
    handle = ember.monitor.register_event_handler(seen.append)
    event = ember.monitor.Event(name="x", timestamp=datetime.datetime.now(),
                                data={"a": 1, "b": 2.0, "c": "s", "d": True})
    ember.monitor.log_event(event)
    ember.monitor.unregister_event_handler(handle)
    ember.monitor.log_event(event)
    assert seen == [event]
    t = torch.monitor.Event(name="x", timestamp=event.timestamp,
                            data={"a": 1, "b": 2.0, "c": "s", "d": True})
    assert event.data == t.data


def test_event_bad_data_raises_type_error():
    with pytest.raises(TypeError):
        ember.monitor.Event("x", datetime.datetime.now(), {"a": [1]})


def test_aggregation_prints_as_torch():
    for name in ("VALUE", "MEAN", "COUNT", "SUM", "MAX", "MIN"):
        ours = getattr(ember.monitor.Aggregation, name)
        theirs = getattr(torch.monitor.Aggregation, name)
        assert (repr(ours), str(ours), int(ours)) == (repr(theirs), str(theirs), int(theirs))


def test_monitor_docstring_examples_pass():
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(ember.monitor):
        test.globs["ember"] = ember
        assert not runner.run(test, out=lambda s: None).failed, test.name

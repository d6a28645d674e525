"""Statistics loggers (``torch.LockingLogger``, ``torch.jit._logging``), compared with torch."""

import pytest

import ember
from ember.jit import _logging

torch = pytest.importorskip("torch")


def _run(mod, logger_cls, kind=None, values=(3, 4)):
    import torch.jit._logging  # noqa: F401

    log = logger_cls()
    set_logger = torch._C._logging_set_logger if mod is torch else _logging.set_logger
    add = torch.jit._logging.add_stat_value if mod is torch else _logging.add_stat_value
    old = set_logger(log)
    try:
        for v in values:
            add("k", v)
    finally:
        set_logger(old)
    if kind is not None:
        log.set_aggregation_type("k", kind)
    return log.get_counter_val("k"), log.get_counter_val("missing")


def test_locking_logger_sums_like_torch():
    assert _run(ember, ember.LockingLogger) == _run(torch, torch.LockingLogger)


@pytest.mark.parametrize("values", [(3, 4), (1, 2, 2)])
def test_locking_logger_average_truncates_like_torch(values):
    assert _run(ember, ember.LockingLogger, ember.AVG, values) == \
        _run(torch, torch.LockingLogger, torch.AVG, values)


def test_aggregation_type_values_like_torch():
    for name in ("SUM", "AVG"):
        e, t = getattr(ember, name), getattr(torch, name)
        assert (int(e), str(e), repr(e)) == (int(t), str(t), repr(t))
    assert ember.AggregationType(1) is ember.AVG


def test_logger_base_has_no_constructor():
    with pytest.raises(TypeError):
        torch.LoggerBase()
    with pytest.raises(TypeError, match="No constructor"):
        ember.LoggerBase()


def test_set_logger_returns_previous_noop_logger():
    old = _logging.set_logger(ember.LockingLogger())
    try:
        assert isinstance(old, ember.NoopLogger) and isinstance(old, ember.LoggerBase)
    finally:
        _logging.set_logger(old)


def test_set_aggregation_type_rejects_int():
    with pytest.raises(TypeError):
        torch.LockingLogger().set_aggregation_type("k", 1)
    with pytest.raises(TypeError):
        ember.LockingLogger().set_aggregation_type("k", 1)

"""``ember._logging.set_logs`` against PyTorch's switchboard."""

import inspect
import logging

import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _reset():
    yield
    ember._logging.set_logs()


def test_set_logs_accepts_torch_keyword_names():
    theirs = set(inspect.signature(torch._logging.set_logs).parameters)
    known = set(ember._logging._COMPONENTS) | set(ember._logging._ARTIFACTS) | {"all", "modules"}
    assert theirs <= known, sorted(theirs - known)


def test_component_level_set_and_reset():
    ember._logging.set_logs(dynamo=logging.INFO)
    assert logging.getLogger("ember._dynamo").level == logging.INFO
    ember._logging.set_logs()
    assert logging.getLogger("ember._dynamo").level == logging.NOTSET


def test_artifacts_switch_on_and_reset_when_not_named():
    ember._logging.set_logs(graph_breaks=True, recompiles=True)
    assert ember._logging.is_artifact_enabled("graph_breaks")
    ember._logging.set_logs(recompiles=True)
    assert not ember._logging.is_artifact_enabled("graph_breaks")
    assert ember._logging.is_artifact_enabled("recompiles")


def test_unknown_switch_raises_type_error_like_torch():
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
            lib._logging.set_logs(foo=True)


def test_bad_level_raises_value_error_and_changes_nothing():
    ember._logging.set_logs(graph_breaks=True)
    for lib in (ember, torch):
        with pytest.raises(ValueError, match="Unrecognized log level for log dynamo"):
            lib._logging.set_logs(dynamo="x")
    assert ember._logging.is_artifact_enabled("graph_breaks")


def test_artifact_logger_passes_records_only_when_on(caplog):
    log = ember._logging.getArtifactLogger("ember.demo", "guards")
    with caplog.at_level(logging.DEBUG):
        log.debug("hidden")
        ember._logging.set_logs(guards=True)
        log.debug("shown")
    assert [r.getMessage() for r in caplog.records] == ["shown"]


def test_modules_dict_sets_named_loggers():
    ember._logging.set_logs(modules={"ember.some.module": logging.DEBUG})
    assert logging.getLogger("ember.some.module").level == logging.DEBUG


def test_lazy_string_formats_late():
    calls = []
    s = ember._logging.LazyString(lambda: calls.append(1) or "v")
    assert calls == [] and str(s) == "v" and calls == [1]

"""The examples in the docstrings of the profiler modules run and print what they say."""

import doctest
import importlib

import pytest

import ember

MODULES = ["ember.profiler", "ember.profiler.profiler", "ember.profiler.record_function",
           "ember.profiler.itt", "ember.autograd.profiler", "ember.autograd.profiler_util",
           "ember.autograd._profiler_events", "ember.autograd._profiler_table",
           "ember.autograd.profiler_legacy"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    globs = {"ember": ember, **vars(module)}
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs=globs):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0

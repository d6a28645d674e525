"""The examples in the docstrings of ``ember.distributions`` run and print what they say."""

import doctest
import importlib
import pkgutil

import pytest

import ember
import ember.distributions

MODULES = sorted(m.name for m in pkgutil.iter_modules(ember.distributions.__path__,
                                                     "ember.distributions."))
MODULES.insert(0, "ember.distributions")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    ember.manual_seed(0)
    globs = {"ember": ember, **vars(ember.distributions), **vars(module)}
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs=globs):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0

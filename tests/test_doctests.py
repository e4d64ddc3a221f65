"""The "For example::" blocks in spec/ and checks/ docstrings are run, so they stay true."""

import doctest
import importlib
import pkgutil

import pytest

import flightcheck.checks
import flightcheck.spec


def _modules():
    for pkg in (flightcheck.spec, flightcheck.checks):
        for info in pkgutil.walk_packages(pkg.__path__, prefix=pkg.__name__ + "."):
            yield info.name


@pytest.mark.parametrize("name", sorted(_modules()))
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest example(s) failed in {name}"

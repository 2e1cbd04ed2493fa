"""Scenarios shaped like real public DDP programs (issue 70), each with and
without the pitfalls that fit it. Every module holds one program's shape and
registers its scenario(s) with `@shape(...)`; no_harm.py runs them in fresh
gloo worlds of real processes.

A scenario is a function run(rank, world, inject): inject is None (the
correct program) or one name of its `injects`. Every line a pitfall can be
reported at (the forward, the collective, the loop over a loader) is in the
scenario's own file, so a PitfallError's .site must name that file.
"""
import importlib
import os
import pkgutil

from ._common import REGISTRY, shape  # noqa: F401

_HERE = os.path.dirname(os.path.abspath(__file__))


def load():
    """{name: Scenario} of every module in this package (imports no
    optional distribution: a scenario's `requires` are imported when it runs)."""
    for info in pkgutil.iter_modules([_HERE]):
        if not info.name.startswith("_"):
            importlib.import_module(__name__ + "." + info.name)
    return dict(REGISTRY)

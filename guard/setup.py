"""setuptools' build step for the guard: pyproject.toml holds the metadata;
this adds ddp_pitfalls/bin/trace, compiled by build_trace.py."""
import os
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_trace  # noqa: E402


class BuildPyWithTrace(build_py):
    def run(self):
        super().run()
        if os.environ.get(build_trace.SKIP_ENV) == "1":
            print("ddp-trace: not built (%s=1); ddp-trace will say how to get it"
                  % build_trace.SKIP_ENV)
            return
        try:
            build_trace.build(os.path.join(self.build_lib, "ddp_pitfalls", "bin", "trace"))
        except build_trace.BuildError as e:
            sys.exit(str(e))


setup(cmdclass={"build_py": BuildPyWithTrace})

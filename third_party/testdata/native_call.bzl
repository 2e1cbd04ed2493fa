"""A macro calling a native rule (no native C++ rules in Bazel 9)."""

def my_test(name):
    native.cc_test(name = name)

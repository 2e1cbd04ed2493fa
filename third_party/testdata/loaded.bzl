"""Every name loaded, one under an alias: check_loads passes it."""

load("@rules_cc//cc:defs.bzl", _cc_test = "cc_test", "CcInfo")
load("@rules_shell//shell:sh_test.bzl", "sh_test")

def my_test(name):
    _cc_test(name = name)
    sh_test(name = name + "_sh", srcs = ["x.sh"])

def _impl(ctx):
    return ctx.attr.dep[CcInfo]

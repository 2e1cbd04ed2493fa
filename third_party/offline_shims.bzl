"""Offline stand-ins for the repositories Bazel 4.2.3 downloads by default.

Debian's bazel-bootstrap has no network at build time, yet the builtin rules
still refer to @rules_cc, @rules_java and @remote_coverage_tools. Debian's own
bazel-rules-cc (0.0.4) is too new for Bazel 4.2.3, so @rules_cc is a shim
whose macros forward to the native rules; @rules_java comes from Debian's
bazel-rules-java; the coverage tools are empty filegroups (coverage is not
used by this project).
"""

_RULES_CC_DEFS = '''"""Forwards rules_cc's public macros to the native rules of this Bazel."""

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_toolchain(**kwargs):
    native.cc_toolchain(**kwargs)

def cc_toolchain_suite(**kwargs):
    native.cc_toolchain_suite(**kwargs)
'''

def _rules_cc_shim_impl(ctx):
    ctx.file("WORKSPACE", 'workspace(name = "rules_cc")\n')
    ctx.file("BUILD", "")
    ctx.file("cc/BUILD", "")
    ctx.file("cc/defs.bzl", _RULES_CC_DEFS)

rules_cc_shim = repository_rule(implementation = _rules_cc_shim_impl)

_RULES_JAVA = "/usr/share/bazel/rules/java"

def _debian_rules_java_impl(ctx):
    root = ctx.path(_RULES_JAVA)
    if not root.exists:
        fail("rules_java not found at %s: install Debian's bazel-rules-java " % _RULES_JAVA +
             "(sudo tools/setup.sh does it)")
    for child in root.readdir():
        ctx.symlink(child, child.basename)

debian_rules_java = repository_rule(implementation = _debian_rules_java_impl, local = True)

def _coverage_tools_shim_impl(ctx):
    ctx.file("WORKSPACE", 'workspace(name = "remote_coverage_tools")\n')
    ctx.file("BUILD", """package(default_visibility = ["//visibility:public"])

filegroup(name = "coverage_report_generator")

filegroup(name = "lcov_merger")
""")

coverage_tools_shim = repository_rule(implementation = _coverage_tools_shim_impl)

"""Offline stand-ins for the repositories Bazel 4.2.3 downloads by default.

Debian's bazel-bootstrap has no network at build time, yet the builtin rules
still refer to @rules_cc, @rules_java and @remote_coverage_tools. Debian's own
bazel-rules-cc (0.0.4) is too new for Bazel 4.2.3, so @rules_cc is a shim
whose macros forward to the native rules (so are @rules_shell and
@rules_python); @rules_java comes from Debian's bazel-rules-java where it is
installed, else is a local stand-in; the coverage tools are empty
filegroups (coverage is not used by this project).
"""

def _is_global(name):
    return name[0].isupper() or name == "cc_common"

def _forwarders(names):
    lines = ['"""Forwards these public names to the native rules of this Bazel."""', ""]
    for n in [n for n in names if _is_global(n)]:
        # A provider or module, global in Bazel 4.2.3: read in another file,
        # since a file cannot both read and define the same global name.
        lines.append('load("//:native_globals.bzl", _%s = "NATIVE_%s")' % (n, n))
    for n in names:
        if _is_global(n):
            lines.append("%s = _%s" % (n, n))
        else:
            lines.append("def %s(**kwargs):\n    native.%s(**kwargs)\n" % (n, n))
    return "\n".join(lines) + "\n"

def _native_shim_impl(ctx):
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.attr.repo_name)
    ctx.file("BUILD", "")
    ctx.file("native_globals.bzl", "NATIVE_CcInfo = CcInfo\nNATIVE_cc_common = cc_common\n")
    for path, names in ctx.attr.files.items():
        ctx.file(path.rsplit("/", 1)[0] + "/BUILD", "")
        ctx.file(path, _forwarders(names))

# A local @rules_cc, @rules_shell or @rules_python for Bazel 4.2.3: each .bzl
# file of `files` (the path the real ruleset loads from) defines the listed
# names as macros forwarding to native.<name>. The real rulesets need a newer
# Bazel; under Bzlmod (MODULE.bazel) the real ones are used instead.
native_shim = repository_rule(
    implementation = _native_shim_impl,
    attrs = {
        "repo_name": attr.string(mandatory = True),
        "files": attr.string_list_dict(mandatory = True),
    },
)

_CC = [
    "cc_library",
    "cc_binary",
    "cc_test",
    "cc_import",
    "cc_toolchain",
    "cc_toolchain_suite",
    "CcInfo",
    "cc_common",
]

def rules_cc_shim(name):
    native_shim(name = name, repo_name = "rules_cc", files = {"cc/defs.bzl": _CC})

def rules_shell_shim(name):
    # The layout of bazelbuild/rules_shell: one .bzl file per rule, and defs.bzl.
    native_shim(name = name, repo_name = "rules_shell", files = {
        "shell/sh_binary.bzl": ["sh_binary"],
        "shell/sh_library.bzl": ["sh_library"],
        "shell/sh_test.bzl": ["sh_test"],
        "shell/defs.bzl": ["sh_binary", "sh_library", "sh_test"],
    })

def rules_python_shim(name):
    native_shim(name = name, repo_name = "rules_python", files = {
        "python/defs.bzl": ["py_binary", "py_library", "py_test"],
    })

_JAVA = [
    "java_binary",
    "java_import",
    "java_library",
    "java_package_configuration",
    "java_plugin",
    "java_runtime",
    "java_test",
    "java_toolchain",
]

def _debian_rules_java_impl(ctx):
    root = ctx.path(ctx.attr.path)
    if root.exists:
        for child in root.readdir():
            ctx.symlink(child, child.basename)
        return

    # No Java rule is used here, but @bazel_tools//tools/jdk (a registered
    # toolchain) loads these from @rules_java//java:defs.bzl.
    ctx.file("WORKSPACE", 'workspace(name = "rules_java")\n')
    ctx.file("BUILD", 'exports_files(["standin.txt"])\n')
    ctx.file("java/BUILD", 'exports_files(["defs.bzl"])\n')
    ctx.file("java/defs.bzl", _forwarders(_JAVA))
    ctx.file("standin.txt", "local stand-in: %s is missing\n" % ctx.attr.path)

# @rules_java: Debian's bazel-rules-java where it is installed, else a local
# stand-in (nothing in the suite uses Java rules, so no machine needs Debian's
# folder). `path` is an attribute so that a test can point it elsewhere.
debian_rules_java = repository_rule(
    implementation = _debian_rules_java_impl,
    local = True,
    attrs = {"path": attr.string(default = "/usr/share/bazel/rules/java")},
)

def _coverage_tools_shim_impl(ctx):
    ctx.file("WORKSPACE", 'workspace(name = "remote_coverage_tools")\n')
    ctx.file("BUILD", """package(default_visibility = ["//visibility:public"])

filegroup(name = "coverage_report_generator")

filegroup(name = "lcov_merger")
""")

coverage_tools_shim = repository_rule(implementation = _coverage_tools_shim_impl)

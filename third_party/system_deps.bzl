"""System libraries from Debian's packages, found by repository rules.

Nothing is downloaded: each rule looks for the package's files on this
machine and, if they are missing, fails with the name of the Debian package
to install (tools/setup.sh installs all of them).
"""

_LIB_DIRS = [
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib",
    "/usr/local/lib",
]

def _find_lib(ctx, filename, package):
    for d in _LIB_DIRS:
        p = ctx.path(d + "/" + filename)
        if p.exists:
            return p
    fail("%s not found in %s: install Debian's %s (sudo tools/setup.sh)" %
         (filename, ", ".join(_LIB_DIRS), package))

def _require(ctx, path, package):
    p = ctx.path(path)
    if not p.exists:
        fail("%s not found: install Debian's %s (sudo tools/setup.sh)" % (path, package))
    return p

def _deb_version(ctx, package):
    r = ctx.execute(["dpkg-query", "-W", "-f=${Version}", package])
    return r.stdout.strip() if r.return_code == 0 and r.stdout.strip() else "unknown"

def _debian_library_impl(ctx):
    for h in ctx.attr.headers:
        _require(ctx, h, ctx.attr.package)
    for lib in ctx.attr.libs:
        ctx.symlink(_find_lib(ctx, lib, ctx.attr.package), "lib/" + lib)
    for src, dst in ctx.attr.symlinks.items():
        ctx.symlink(_require(ctx, src, ctx.attr.package), dst)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD", ctx.attr.build)
    ctx.file("version.txt", _deb_version(ctx, ctx.attr.package.split(",")[0].strip()) + "\n")

debian_library = repository_rule(
    implementation = _debian_library_impl,
    local = True,
    attrs = {
        "package": attr.string(mandatory = True),
        "headers": attr.string_list(),
        "libs": attr.string_list(),
        "symlinks": attr.string_dict(),
        "build": attr.string(mandatory = True),
    },
)

_GTEST_BUILD = """package(default_visibility = ["//visibility:public"])

cc_import(name = "gtest_a", static_library = "lib/libgtest.a")

cc_import(name = "gtest_main_a", static_library = "lib/libgtest_main.a")

cc_import(name = "gmock_a", static_library = "lib/libgmock.a")

cc_library(name = "gtest", deps = [":gtest_a"], linkopts = ["-pthread"])

cc_library(name = "gtest_main", deps = [":gtest_main_a", ":gtest"])

cc_library(name = "gmock", deps = [":gmock_a", ":gtest"])
"""

_BENCHMARK_BUILD = """package(default_visibility = ["//visibility:public"])

# Debian ships the library shared; link it from the system like any other.
cc_library(name = "benchmark", linkopts = ["-lbenchmark", "-pthread"])

cc_import(name = "benchmark_main_a", static_library = "lib/libbenchmark_main.a")

cc_library(name = "benchmark_main", deps = [":benchmark_main_a", ":benchmark"])
"""

_EIGEN_BUILD = """package(default_visibility = ["//visibility:public"])

cc_library(
    name = "eigen",
    hdrs = glob(["eigen3/Eigen/**", "eigen3/unsupported/Eigen/**"]),
    includes = ["eigen3"],
)
"""

_GLOO_BUILD = """package(default_visibility = ["//visibility:public"])

# libgloo.so pulls in its own link deps (hiredis, ibverbs) as DT_NEEDED.
cc_library(name = "gloo", linkopts = ["-lgloo", "-pthread"])
"""

def system_deps():
    debian_library(
        name = "gtest",
        package = "libgtest-dev, libgmock-dev",
        headers = ["/usr/include/gtest/gtest.h", "/usr/include/gmock/gmock.h"],
        libs = ["libgtest.a", "libgtest_main.a", "libgmock.a"],
        build = _GTEST_BUILD,
    )
    debian_library(
        name = "benchmark",
        package = "libbenchmark-dev",
        headers = ["/usr/include/benchmark/benchmark.h"],
        libs = ["libbenchmark.so", "libbenchmark_main.a"],
        build = _BENCHMARK_BUILD,
    )
    debian_library(
        name = "eigen",
        package = "libeigen3-dev",
        headers = ["/usr/include/eigen3/Eigen/Core"],
        symlinks = {"/usr/include/eigen3": "eigen3"},
        build = _EIGEN_BUILD,
    )
    debian_library(
        name = "gloo",
        package = "libgloo-dev",
        headers = ["/usr/include/gloo/config.h", "/usr/include/gloo/rendezvous/file_store.h"],
        libs = ["libgloo.so"],
        build = _GLOO_BUILD,
    )

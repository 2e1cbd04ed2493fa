"""Finds CUDA and NCCL on this machine and describes them as @local_cuda.

Search order: $CUDA_PATH, else the folder above the `nvcc` on $PATH, else
/usr/local/cuda. CUDA counts as present only if that folder has nvcc, the
CUDA runtime, and NCCL (nccl.h and libnccl, looked up in the CUDA folder and
in the system's folders). If $CUDA_PATH is set but holds no CUDA, CUDA is
absent: that is how a CPU-only build is checked on a machine that has CUDA.

@local_cuda//:defs.bzl exports CUDA_AVAILABLE, CUDA_REASON, NVCC,
CUDA_ROOT and CUDA_VERSION; @local_cuda//:cudart and :nccl link them.
"""

_SYSTEM_LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"]

def _first_existing(ctx, paths):
    for p in paths:
        if ctx.path(p).exists:
            return ctx.path(p)
    return None

def _root_candidate(ctx):
    env_path = ctx.os.environ.get("CUDA_PATH", "")
    if env_path:
        return env_path, "CUDA_PATH=" + env_path
    nvcc = ctx.which("nvcc")
    if nvcc:
        return str(nvcc.dirname.dirname), "nvcc on PATH (%s)" % nvcc
    return "/usr/local/cuda", "default /usr/local/cuda"

def _probe(ctx):
    """Returns (info dict, None) when CUDA+NCCL are usable, else (None, reason)."""
    root, how = _root_candidate(ctx)
    nvcc = ctx.path(root + "/bin/nvcc")
    if not nvcc.exists:
        return None, "no nvcc under %s (from %s)" % (root, how)
    libdirs = [root + "/lib64", root + "/lib", root + "/targets/x86_64-linux/lib"]
    cudart = _first_existing(ctx, [d + "/libcudart_static.a" for d in libdirs])
    if not cudart:
        return None, "no libcudart_static.a under %s" % root
    nccl_h = _first_existing(ctx, [root + "/include/nccl.h", "/usr/include/nccl.h"])
    if not nccl_h:
        return None, "no nccl.h in %s/include or /usr/include (Debian: libnccl-dev)" % root
    nccl_lib = _first_existing(ctx, [d + "/libnccl.so" for d in libdirs + _SYSTEM_LIB_DIRS])
    if not nccl_lib:
        return None, "no libnccl.so next to CUDA or in the system's lib folders"
    r = ctx.execute([str(nvcc), "--version"])
    version = "unknown"
    for line in r.stdout.splitlines():
        if "release" in line:
            version = line.split("release")[1].split(",")[0].strip()
    return {
        "root": root,
        "how": how,
        "nvcc": str(nvcc),
        "cudart_dir": str(cudart.dirname),
        "nccl_include": str(nccl_h.dirname),
        "nccl_libdir": str(nccl_lib.dirname),
        "version": version,
    }, None

_BUILD_AVAILABLE = """load("@rules_cc//cc:defs.bzl", "cc_library")

package(default_visibility = ["//visibility:public"])

# What configure found, as C string macros (for tools/doctor and provenance).
cc_library(name = "cuda_info", hdrs = ["cuda_info.h"])

cc_library(
    name = "cuda_headers",
    hdrs = glob(["include/**"]),
    includes = ["include"],
)

cc_library(
    name = "nccl_headers",
    hdrs = ["nccl_include/nccl.h"] + glob(["nccl_include/nccl_device/**", "nccl_include/nccl_device.h"]),
    includes = ["nccl_include"],
)

# The runtime is linked statically: a binary carried to a GPU runner needs
# only the NVIDIA driver there, not a matching libcudart.so.
cc_library(
    name = "cudart",
    linkopts = ["-L{cudart_dir}", "-l:libcudart_static.a", "-ldl", "-lrt", "-pthread"],
    deps = [":cuda_headers"],
)

# NCCL is linked dynamically (soname libnccl.so.2): GPU runners bring their own.
cc_library(
    name = "nccl",
    linkopts = ["-L{nccl_libdir}", "-lnccl", "-Wl,-rpath,{nccl_libdir}"],
    deps = [":nccl_headers", ":cudart"],
)
"""

_BUILD_ABSENT = """load("@rules_cc//cc:defs.bzl", "cc_library")

package(default_visibility = ["//visibility:public"])

# What configure found, as C string macros (for tools/doctor and provenance).
cc_library(name = "cuda_info", hdrs = ["cuda_info.h"])

# CUDA is absent ({reason}); these targets exist so that BUILD files can name
# them, and every target that needs them is marked incompatible and skipped.
cc_library(name = "cuda_headers", target_compatible_with = ["@ddp_pitfalls//third_party/cuda:cuda_missing"])

cc_library(name = "cudart", target_compatible_with = ["@ddp_pitfalls//third_party/cuda:cuda_missing"])

cc_library(name = "nccl", target_compatible_with = ["@ddp_pitfalls//third_party/cuda:cuda_missing"])
"""

def _cuda_configure_impl(ctx):
    info, reason = _probe(ctx)
    ctx.file("WORKSPACE", 'workspace(name = "local_cuda")\n')
    if info:
        ctx.symlink(info["root"] + "/include", "include")
        ctx.symlink(info["nccl_include"], "nccl_include")
        ctx.file("BUILD", _BUILD_AVAILABLE.format(**info))
        defs = {
            "CUDA_AVAILABLE": True,
            "CUDA_REASON": "found via " + info["how"],
            "NVCC": info["nvcc"],
            "CUDA_ROOT": info["root"],
            "CUDA_VERSION": info["version"],
        }
    else:
        ctx.file("BUILD", _BUILD_ABSENT.format(reason = reason))
        defs = {
            "CUDA_AVAILABLE": False,
            "CUDA_REASON": reason,
            "NVCC": "",
            "CUDA_ROOT": "",
            "CUDA_VERSION": "",
        }
    ctx.file("defs.bzl", "".join(["%s = %r\n" % (k, v) for k, v in defs.items()]))
    ctx.file("cuda_info.h", "".join(
        ["// Generated by cuda_configure.\n#pragma once\n"] +
        ["#define DDP_%s %s\n" % (k, json.encode(v) if type(v) == "string" else ("1" if v else "0"))
         for k, v in defs.items()],
    ))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH", "PATH"],
    local = True,
)

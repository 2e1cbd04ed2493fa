"""cuda_library: compiles .cu files with nvcc into a library cc_* targets use.

Each .cu file becomes one position-independent object (a genrule running the
nvcc that @local_cuda found); the objects and the headers form a cc_library.
When CUDA is absent the targets still exist but are incompatible, so
`bazel build //...` skips them (and everything depending on them) cleanly.

Architectures: `arches` on the target, else --define=cuda_arches=90 (or
=80) on the command line for one architecture's SASS (a smaller binary, e.g.
a bundle carried to an H100 or H200: tools/bundle/make_bundle.sh
--cuda-arches 90), else sm_80 (A100) and sm_90 (H100/H200).
"""

load("@rules_cc//cc:defs.bzl", "cc_library")
load("@local_cuda//:defs.bzl", "CUDA_AVAILABLE", "NVCC")

DEFAULT_CUDA_ARCHES = ["80", "90"]

# Add to any target that cannot exist without CUDA.
CUDA_ONLY = [] if CUDA_AVAILABLE else ["//third_party/cuda:cuda_missing"]

def _gencode_flags(arches):
    flags = []
    for a in arches:
        flags.append("-gencode=arch=compute_%s,code=sm_%s" % (a, a))

    # PTX of the newest architecture, so newer GPUs can JIT it.
    flags.append("-gencode=arch=compute_%s,code=compute_%s" % (arches[-1], arches[-1]))
    return " ".join(flags)

# --define=cuda_arches=V: the config_setting of //third_party/cuda for each V.
ARCH_DEFINES = {"80": "//third_party/cuda:arches_80", "90": "//third_party/cuda:arches_90"}

def cuda_library(name, srcs, hdrs = [], deps = [], arches = None, nvcc_flags = [], **kwargs):
    """A cc_library built from .cu sources with nvcc."""
    if arches:
        gencode = _gencode_flags(arches)
    else:
        choices = {setting: _gencode_flags([a]) for a, setting in ARCH_DEFINES.items()}
        choices["//conditions:default"] = _gencode_flags(DEFAULT_CUDA_ARCHES)
        gencode = select(choices)
    objs = []
    for src in srcs:
        stem = src.rsplit(".", 1)[0].replace("/", "_")
        obj = "_%s_cuda/%s.pic.o" % (name, stem)
        native.genrule(
            name = "_%s_%s_nvcc" % (name, stem),
            srcs = [src] + hdrs + ["@local_cuda//:cuda_headers"],
            outs = [obj],
            cmd = " ".join([
                NVCC or "false",
                "-std=c++20 -O3 -Xcompiler -fPIC -Xcompiler -Wall",
                "--expt-relaxed-constexpr",
            ]) + " " + gencode + " " + " ".join([
                " ".join(nvcc_flags),
                "-I. -I$(GENDIR)",
                "-c $(location %s) -o $@" % src,
            ]),
            target_compatible_with = CUDA_ONLY,
            tags = ["cuda"],
        )
        objs.append(obj)
    cc_library(
        name = name,
        srcs = objs,
        hdrs = hdrs,
        deps = deps + ["@local_cuda//:cudart"],
        target_compatible_with = CUDA_ONLY,
        **kwargs
    )

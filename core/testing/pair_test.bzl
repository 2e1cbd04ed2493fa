"""pair_test: one test source, run on Gloo always and on NCCL where CUDA is.

Creates `<name>` (Gloo) and `<name>_nccl` (tag gpu, CUDA only). The source
asks core/testing/backend.h which backend it is built for; the NCCL build
skips with a printed reason where there is no GPU.
"""

load("//third_party/cuda:cuda.bzl", "CUDA_ONLY")

def pair_test(name, srcs, deps = [], size = "medium", **kwargs):
    native.cc_test(
        name = name,
        srcs = srcs,
        size = size,
        deps = deps + ["//core/testing:backend", "@gtest//:gtest_main"],
        **kwargs
    )
    native.cc_test(
        name = name + "_nccl",
        srcs = srcs,
        size = size,
        local_defines = ["DDP_TEST_BACKEND_NCCL"],
        tags = ["gpu"],
        target_compatible_with = CUDA_ONLY,
        deps = deps + ["//core/testing:backend_nccl", "@gtest//:gtest_main"],
        **kwargs
    )

"""pair_test: one test source, run on Gloo always and on NCCL where CUDA is.

Creates `<name>` (Gloo) and `<name>_nccl` (tag gpu, CUDA only). The source
asks core/testing/backend.h which backend it is built for; the NCCL build
skips with a printed reason where there is no GPU.
"""

load("@rules_cc//cc:defs.bzl", "cc_test")
load("//third_party/cuda:cuda.bzl", "CUDA_ONLY")

# For the `_nccl` twins that leave a collective unmatched on purpose (a rank
# killed, stopped or aborted inside an NCCL kernel): no CUDA MPS. On one
# H100 such a run under an MPS server took a fatal GPU error and the server
# refused every new client afterwards (results/gpu/h100-2026-11-27); they
# passed there without MPS. tools/bundle/mps_isolated.txt lists the same
# binaries for the bundle's runner.
NO_MPS = {"DDP_MPS": "0"}

def pair_test(name, srcs, deps = [], size = "medium", nccl_env = {}, **kwargs):
    cc_test(
        name = name,
        srcs = srcs,
        size = size,
        deps = deps + ["//core/testing:backend", "@gtest//:gtest_main"],
        **kwargs
    )
    cc_test(
        name = name + "_nccl",
        srcs = srcs,
        size = size,
        local_defines = ["DDP_TEST_BACKEND_NCCL"],
        env = nccl_env,
        tags = ["gpu"],
        target_compatible_with = CUDA_ONLY,
        deps = deps + ["//core/testing:backend_nccl", "@gtest//:gtest_main"],
        **kwargs
    )

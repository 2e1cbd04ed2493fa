// bazel run //tools:doctor — prints the environment report; exits 0 (missing
// pieces are reported, not fatal), 1 when the NVIDIA driver is too old for
// the CUDA runtime built in (said first, in one line), 2 on bad usage.
#include <cstdio>
#include <cstring>
#include <string>

#include "core/env/report.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: doctor\n"
          "Prints the versions of Bazel, the compiler, Eigen, Gloo, CUDA and NCCL,\n"
          "the visible GPUs, and which collective backends this machine can run.\n");
      return 0;
    }
    std::fprintf(stderr, "doctor: unknown argument '%s' (doctor takes no arguments; see --help)\n",
                 argv[i]);
    return 2;
  }
  // Before anything else: every GPU run fails when this is not ok.
  const std::string problem = ddp::env::DriverProblemHere(ddp::env::ProbeGpus());
  if (!problem.empty()) std::fprintf(stderr, "doctor: %s\n", problem.c_str());
  std::printf("== ddp-pitfalls doctor ==\n");
  for (const auto& [key, value] : ddp::env::Report()) {
    std::printf("%-13s %s\n", (key + ":").c_str(), value.c_str());
  }
  return problem.empty() ? 0 : 1;
}

// The driver check with injected versions (no GPU or driver needed).
#include "core/env/driver_check.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace ddp::env {
namespace {

TEST(DriverProblem, OldDriverForCuda13IsOneLineNamingTheFix) {
  EXPECT_EQ(DriverProblem("13.0", "535.104.05", "12.2"),
            "this binary's CUDA 13.0 runtime needs driver >= 580; this machine has 535.104.05: "
            "rebuild with CUDA_PATH pointing at a CUDA 12 toolkit");
  EXPECT_NE(DriverProblem("13.0", "570.86.15", "12.8"), "");
}

TEST(DriverProblem, NewEnoughDriversPass) {
  EXPECT_EQ(DriverProblem("13.0", "580.159.04", "13.0"), "");
  EXPECT_EQ(DriverProblem("13.0", "590.1", ""), "");
  EXPECT_EQ(DriverProblem("12.4", "535.104.05", "12.2"), "");  // minor version compatibility
  EXPECT_EQ(DriverProblem("12.0", "525.60.13", ""), "");
}

TEST(DriverProblem, FallsBackToTheDriversCudaVersion) {
  EXPECT_EQ(DriverProblem("13.0", "", "12.2"),
            "this binary's CUDA 13.0 runtime needs driver >= 580; this machine has a driver for "
            "CUDA 12.2: rebuild with CUDA_PATH pointing at a CUDA 12 toolkit");
  EXPECT_EQ(DriverProblem("13.0", "", "13.0"), "");
  EXPECT_EQ(DriverProblem("12.4", "", "11.4"),
            "this binary's CUDA 12.4 runtime needs driver >= 525; this machine has a driver for "
            "CUDA 11.4: rebuild with CUDA_PATH pointing at a CUDA 11 toolkit");
}

TEST(DriverProblem, NothingKnownIsNotThisChecksProblem) {
  EXPECT_EQ(DriverProblem("13.0", "", "none"), "");  // no driver: no GPU, reported elsewhere
  EXPECT_EQ(DriverProblem("", "535.104.05", "12.2"), "");
  EXPECT_EQ(DriverProblem("99.0", "535.104.05", "12.2"), "");
}

TEST(NvidiaDriverRelease, ReadsBothModuleFlavours) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  std::ofstream(dir + "/proprietary")
      << "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC "
         "2023\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n";
  std::ofstream(dir + "/open")
      << "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
         "(dvs-builder@U16-I3-B07-4-3)  Thu Oct  9 2025\n";
  EXPECT_EQ(NvidiaDriverRelease(dir + "/proprietary"), "535.104.05");
  EXPECT_EQ(NvidiaDriverRelease(dir + "/open"), "580.159.04");
  EXPECT_EQ(NvidiaDriverRelease(dir + "/absent"), "");
}

}  // namespace
}  // namespace ddp::env

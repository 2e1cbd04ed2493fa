// Device::BeginSpan / EndSpan / TakeSpanSeconds: spans sum, are forgotten
// once taken, do not nest; on the emulated device always, on a real GPU
// (CUDA events on the device's stream) where there is one. The GPU case is
// in this file rather than a twin because it only needs the GPU to exist.
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/device/device.h"
#include "core/device/emulated_device.h"
#include "core/device/make_device.h"
#include "core/testing/gpu.h"
#include "gtest/gtest.h"

namespace ddp::device {
namespace {

using Clock = std::chrono::steady_clock;

TEST(Spans, EmulatedSumsSpansAndForgetsThemOnceTaken) {
  EmulatedDevice<float> dev;
  EXPECT_EQ(dev.TakeSpanSeconds(), 0);
  const auto t0 = Clock::now();
  for (int i = 0; i < 2; ++i) {
    dev.BeginSpan();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    dev.EndSpan();
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // between spans: not counted
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double s = dev.TakeSpanSeconds();
  EXPECT_GE(s, 0.040);
  EXPECT_LT(s, wall - 0.055);  // the 60 ms between the spans are not in it (5 ms of slack)
  EXPECT_EQ(dev.TakeSpanSeconds(), 0);
}

TEST(Spans, EmulatedRefusesNestingAndUnmatchedEnds) {
  EmulatedDevice<double> dev;
  EXPECT_THROW(dev.EndSpan(), std::logic_error);
  dev.BeginSpan();
  EXPECT_THROW(dev.BeginSpan(), std::logic_error);
  EXPECT_THROW(dev.TakeSpanSeconds(), std::logic_error);
  dev.EndSpan();
  EXPECT_GE(dev.TakeSpanSeconds(), 0);
}

// On the GPU: a span around a kernel-sized piece of work is positive, no
// longer than the host's wall clock around it and its Synchronize, and two
// spans around the same work sum to about twice one (the events time the
// work, not the host's calls).
TEST(Spans, CudaEventsTimeTheQueuedWork) {
  DDP_SKIP_UNLESS_GPU();
  std::unique_ptr<Device<float>> gpu = MakeDevice<float>(Placement::kCuda);
  const std::size_t n = std::size_t{1} << 24;  // 64 MiB: a copy of it takes tens of microseconds
  float* a = gpu->Allocate(n);
  float* b = gpu->Allocate(n);
  gpu->Zero(a, n);
  gpu->Synchronize();
  EXPECT_THROW(gpu->EndSpan(), std::logic_error);
  const auto t0 = Clock::now();
  gpu->BeginSpan();
  gpu->CopyRows(b, n, a, n, n, 1);
  gpu->EndSpan();
  const double one = gpu->TakeSpanSeconds();
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_GT(one, 0);
  EXPECT_LE(one, wall);
  std::vector<double> twice;
  for (int k = 0; k < 3; ++k) {
    for (int i = 0; i < 2; ++i) {
      gpu->BeginSpan();
      gpu->CopyRows(b, n, a, n, n, 1);
      gpu->EndSpan();
    }
    twice.push_back(gpu->TakeSpanSeconds());
  }
  std::printf("[gpu] one 64 MiB D2D copy %.1f us, two in two spans %.1f / %.1f / %.1f us\n", one * 1e6,
              twice[0] * 1e6, twice[1] * 1e6, twice[2] * 1e6);
  EXPECT_GT(twice[2], 0);
  gpu->Free(a);
  gpu->Free(b);
}

}  // namespace
}  // namespace ddp::device

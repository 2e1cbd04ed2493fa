// Device spans (device.h: BeginSpan / EndSpan / TakeSpanSeconds) by the
// host's steady clock, for memory whose calls complete on return (the
// emulated device; bench/padding's host memory), where the clock between
// the two calls is the work's time.
#pragma once

#include <chrono>
#include <stdexcept>

namespace ddp::device {

class SteadySpans {
 public:
  void Begin() {
    if (open_) throw std::logic_error("Device::BeginSpan inside an open span");
    open_ = true;
    begin_ = std::chrono::steady_clock::now();
  }
  void End() {
    if (!open_) throw std::logic_error("Device::EndSpan without BeginSpan");
    open_ = false;
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_).count();
  }
  double Take() {
    if (open_) throw std::logic_error("Device::TakeSpanSeconds inside an open span");
    const double s = seconds_;
    seconds_ = 0;
    return s;
  }

 private:
  bool open_ = false;
  std::chrono::steady_clock::time_point begin_;
  double seconds_ = 0;
};

}  // namespace ddp::device

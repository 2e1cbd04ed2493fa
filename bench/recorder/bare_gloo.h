// A bare Gloo communicator: a gloo::rendezvous::Context over TCP, the same
// construction core/comm's Gloo backend uses, and allreduce/barrier calls
// straight to Gloo with no layer around them: the baseline of the Comm
// layer's overhead.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace gloo {
class Context;
}

namespace ddp::bench {

class BareGloo {
 public:
  // Rendezvous in the file store `rdzv` under `prefix`; binds 127.0.0.1.
  BareGloo(const std::string& rdzv, const std::string& prefix, int rank, int world_size);
  // Sum of one double over the ranks, in place (a fresh tag per call, as
  // the Comm layer uses).
  void Allreduce(double* x);
  void Barrier();

 private:
  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
};

}  // namespace ddp::bench

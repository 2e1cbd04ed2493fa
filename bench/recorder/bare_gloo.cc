#include "bench/recorder/bare_gloo.h"

#include <chrono>

#include "core/store/store.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"

namespace ddp::bench {

BareGloo::BareGloo(const std::string& rdzv, const std::string& prefix, int rank, int world_size) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
  context->setTimeout(std::chrono::seconds(60));
  auto store = store::PrefixedStore(store::OpenStore(rdzv), prefix);
  context->connectFullMesh(*store, device);
  context_ = context;
}

void BareGloo::Allreduce(double* x) {
  gloo::AllreduceOptions opts(context_);
  opts.setOutput(x, 1);
  void (*sum)(void*, const void*, const void*, size_t) = &gloo::sum<double>;
  opts.setReduceFunction(sum);
  opts.setTag(tag_ += 2);
  gloo::allreduce(opts);
}

void BareGloo::Barrier() {
  gloo::BarrierOptions opts(context_);
  opts.setTag(tag_ += 2);
  gloo::barrier(opts);
}

}  // namespace ddp::bench

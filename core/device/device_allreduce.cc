#include "core/device/device_allreduce.h"

namespace ddp::device {

template <typename T>
void AllreduceOnDevice(comm::Comm& comm, Device<T>* device, std::span<T> host, CopyKind kind,
                       comm::ReduceOp op, comm::Comm::Site site) {
  if (device == nullptr) {
    comm.Allreduce(host.data(), host.size(), comm::DTypeOf<T>(), op, site);
    return;
  }
  // A fresh buffer per call: the pairs' buffers are small and their sizes
  // vary; the allocation is not what these runs measure.
  DeviceArray<T> buffer(device);
  T* d = buffer.Reserve(host.size());
  device->Upload(d, host.data(), host.size(), kind);
  device->Synchronize();  // the upload is complete before the engine reads it
  comm.Allreduce(d, host.size(), comm::DTypeOf<T>(), op, site);
  device->Download(host.data(), d, host.size(), kind);
}

template void AllreduceOnDevice<float>(comm::Comm&, Device<float>*, std::span<float>, CopyKind, comm::ReduceOp,
                                       comm::Comm::Site);
template void AllreduceOnDevice<double>(comm::Comm&, Device<double>*, std::span<double>, CopyKind,
                                        comm::ReduceOp, comm::Comm::Site);

}  // namespace ddp::device

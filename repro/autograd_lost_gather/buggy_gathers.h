// The two gathers of the bug report (seed 002).
//
// DetachedGather: torch.distributed.all_gather into fresh tensors (as
// torchmetrics' _simple_gather_all_tensors): the outputs are new leaves with
// no autograd history, so nothing flows back, not even to this rank's own
// slot. Backward returns zeros and makes no collective call.
//
// LocalReinsertGather: the seed's fix, `gathered[rank] = result` after the
// all_gather. The own slot is the input tensor itself, so its gradient flows
// back; the other W - 1 slots are still constants. Backward returns the own
// slice of dL/d(gathered): every other rank's use of this rank's rows is lost.
#pragma once

#include "repro/autograd_lost_gather/gather_op.h"

namespace ddp::autograd_lost_gather {

class DetachedGather final : public GatherOp {
 public:
  Mat Backward(comm::Comm& comm, const Mat& d_gathered) override;
};

class LocalReinsertGather final : public GatherOp {
 public:
  Mat Backward(comm::Comm& comm, const Mat& d_gathered) override;
};

}  // namespace ddp::autograd_lost_gather

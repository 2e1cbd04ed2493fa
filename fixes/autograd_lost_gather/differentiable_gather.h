// A differentiable all_gather (as torch.distributed.nn.all_gather): the
// forward gathers every rank's rows; the backward sends each rank the SUM
// over ranks of their gradients at its rows.
//
// Why the sum: rank s's loss L_s uses the gathered copy of rank r's rows, so
// d(sum_s L_s)/d(rows_r) = sum_s dL_s/d(gathered_s)[slice r]. DDP then
// averages parameter gradients, which is what makes (1/W) sum_s L_s the
// objective being differentiated; dropping the sum (the seed's fix) keeps
// only s = r.
//
// Two ways to compute that adjoint of all_gather / allgatherv:
//   kReduceScatter  reduce_scatter(sum). Equal counts: one ReduceScatter on
//                   the gathered gradient as it is. Unequal counts (the
//                   adjoint of allgatherv): every rank's block is padded to
//                   the largest count, ReduceScatter, the padding dropped;
//                   each rank sends and receives (W-1) * max_count * D
//                   elements in a ring (max_count * W * D input per rank).
//   kAllreduce      all-reduce the whole N x D gradient, keep the own rows:
//                   any counts, no padding, but 2 (W-1)/W * N * D elements
//                   per rank in a ring, about twice the reduce_scatter
//                   traffic when counts are near equal.
// Both are exact sums of the same W terms; only the summation order of the
// engine may differ (the test holds both to 1e-10 relative in double).
#pragma once

#include "repro/autograd_lost_gather/gather_op.h"

namespace ddp::autograd_lost_gather {

enum class AdjointMethod { kReduceScatter, kAllreduce };

class DifferentiableGather final : public GatherOp {
 public:
  explicit DifferentiableGather(AdjointMethod method) : method_(method) {}
  Mat Backward(comm::Comm& comm, const Mat& d_gathered) override;

 private:
  AdjointMethod method_;
};

}  // namespace ddp::autograd_lost_gather

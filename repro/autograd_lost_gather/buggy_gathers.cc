#include "repro/autograd_lost_gather/buggy_gathers.h"

namespace ddp::autograd_lost_gather {

Mat DetachedGather::Backward(comm::Comm&, const Mat&) { return Mat::Zero(rows_, cols_); }

Mat LocalReinsertGather::Backward(comm::Comm&, const Mat& d_gathered) {
  return d_gathered.middleRows(offset_, rows_);
}

}  // namespace ddp::autograd_lost_gather

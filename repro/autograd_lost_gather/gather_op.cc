#include "repro/autograd_lost_gather/gather_op.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "repro/autograd_lost_gather/task.h"

namespace ddp::autograd_lost_gather {

Mat AllgatherRows(comm::Comm& comm, const Mat& mine, std::span<const int64_t> counts) {
  if (counts.size() != static_cast<std::size_t>(comm.world_size()) ||
      counts[static_cast<std::size_t>(comm.rank())] != mine.rows()) {
    throw std::invalid_argument("AllgatherRows: counts do not match the world or this rank's rows");
  }
  const Eigen::Index cols = mine.cols();
  const std::span<const double> send(mine.data(), static_cast<std::size_t>(mine.size()));
  std::vector<double> all;
  if (std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts[0]; })) {
    all = comm.Allgather<double>(send);
  } else {
    std::vector<std::size_t> elems;
    for (int64_t c : counts) elems.push_back(static_cast<std::size_t>(c * cols));
    all = comm.Allgatherv<double>(send, elems);
  }
  // Row-major: rank r's rows are one contiguous block at its offset.
  return Eigen::Map<const Mat>(all.data(), Total(counts), cols);
}

Mat GatherOp::Forward(comm::Comm& comm, const Mat& mine, std::span<const int64_t> counts) {
  counts_.assign(counts.begin(), counts.end());
  offset_ = Offsets(counts)[static_cast<std::size_t>(comm.rank())];
  rows_ = mine.rows();
  cols_ = mine.cols();
  return AllgatherRows(comm, mine, counts);
}

}  // namespace ddp::autograd_lost_gather

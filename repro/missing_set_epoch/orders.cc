#include "repro/missing_set_epoch/orders.h"

#include <algorithm>
#include <span>

namespace ddp::missing_set_epoch {

OrderStats MeasureOrders(comm::Comm& comm, Mode mode, OrderConfig c, int64_t first_seed,
                         int seeds) {
  OrderStats s;
  double cov_sum = 0, dup_sum = 0, missed_sum = 0;
  for (int k = 0; k < seeds; ++k) {
    c.seed = first_seed + k;
    std::vector<int64_t> previous, first;
    for (int epoch = 0; epoch < c.epochs; ++epoch) {
      const std::vector<int64_t> mine = RankIndices(mode, c, comm.rank(), epoch);
      const std::vector<int64_t> global =
          Interleave(comm.Allgather<int64_t>(std::span<const int64_t>(mine)), comm.world_size());
      const EpochCoverage cov = Coverage(global, c.n);
      ++s.epochs;
      cov_sum += cov.coverage;
      dup_sum += static_cast<double>(cov.duplicates);
      missed_sum += static_cast<double>(cov.missed);
      s.coverage_min = std::min(s.coverage_min, cov.coverage);
      s.coverage_max = std::max(s.coverage_max, cov.coverage);
      s.duplicates_max = std::max(s.duplicates_max, cov.duplicates);
      if (epoch > 0) {
        const double same = IdenticalFraction(previous, global);
        s.identical_min = std::min(s.identical_min, same);
        s.identical_max = std::max(s.identical_max, same);
        ++s.epoch_pairs;
      } else {
        first = global;
      }
      s.same_as_epoch0 += global == first;
      s.matches_one_process += global == OneProcessOrder(c, epoch);
      previous = global;
    }
  }
  s.coverage_mean = cov_sum / s.epochs;
  s.duplicates_mean = dup_sum / s.epochs;
  s.missed_mean = missed_sum / s.epochs;
  return s;
}

}  // namespace ddp::missing_set_epoch

// The configurations a wrong_all_gather run covers (shared by repro and fix).
#pragma once

#include <vector>

#include "core/harness/pair_main.h"
#include "repro/wrong_all_gather/scenario.h"

namespace ddp::wrong_all_gather {

struct Row {
  int64_t n = 0;
  int world_size = 0;
  int batch_size = 0;
  int seeds = 1;
  uint64_t first_seed = 0;
  Config At(Sharding s, int k) const;  // the configuration of seed number k
};

// Without --sweep: W = --world_size, N in {--n, 250 W}, batch in
// {--batch_size, 7}. With --sweep: W in {2, 4, 8}, N in {--n, 250 W, 97,
// 10}, batch in {--batch_size, 7, 1}. 250 W splits evenly (the control).
std::vector<Row> Rows(const harness::CommonFlags& f, bool sweep);
std::vector<int> WorldSizes(const std::vector<Row>& rows);
std::vector<Row> RowsOf(const std::vector<Row>& rows, int world_size);

results::Json ConfigJson(const Row& row, Sharding s);

}  // namespace ddp::wrong_all_gather

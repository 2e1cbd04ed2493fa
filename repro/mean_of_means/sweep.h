// The configurations a mean_of_means run covers, shared by repro and fix so
// that their tables line up row for row.
#pragma once

#include <string>
#include <vector>

#include "core/cli/flags.h"
#include "core/harness/pair_main.h"
#include "repro/mean_of_means/scenario.h"

namespace ddp::mean_of_means {

// The flags repro and fix both take beyond PairMain's common ones.
struct RowFlags {
  bool sweep = false;
  bool no_lightning = false;
  std::string device = "auto";  // --device: a shared flag (core/device/device_flag.h)
};
// Registers --sweep and --no_lightning.
void AddRowFlags(cli::Flags& flags, RowFlags* rows);

// One row of the table: a configuration without its seed (seeds are swept
// inside the row).
struct Row {
  Config config;  // seed unset
  int seeds = 1;
  std::uint64_t first_seed = 0;
};

// --sweep: W in {2, 4, 8} x N in {--n, 1024, 97} x batch in {--batch_size, 7, 1}.
// Otherwise: W = --world_size, N in {--n, 256 W} x batch in {--batch_size, 7}.
// Every sharding for each. 256 W (and 1024 for W in {2, 4, 8}) splits evenly:
// the control rows where averaging averages is exact.
std::vector<Row> Rows(const harness::CommonFlags& f, bool sweep);

// Rows grouped by world size (one world of ranks runs all rows of its W).
std::vector<int> WorldSizes(const std::vector<Row>& rows);
// The rows of one world size, in order.
std::vector<Row> RowsOf(const std::vector<Row>& rows, int world_size);

results::Json ConfigJson(const Row& row);

// Lightning issues 21838 / 21859: W = 16 ranks, a 44-sample validation split
// sharded without padding (12 ranks hold 3 samples, 4 hold 2), one batch per
// rank; and the control N = 48 (3 each). Gloo only; oversubscribed on a
// small machine, which is fine: the case is about values, not time.
constexpr int kLightningWorld = 16;
std::vector<Row> LightningRows(const harness::CommonFlags& f);
// Whether this run makes the Lightning world: on gloo, and under a launcher
// only when it started exactly kLightningWorld ranks (a launched world's size
// is the launcher's, so W = 16 rows on 3 launched ranks would be wrong rows).
bool RunsLightningWorld(const harness::CommonFlags& f);

}  // namespace ddp::mean_of_means

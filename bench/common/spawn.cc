#include "bench/common/spawn.h"

#include <cstdio>

namespace ddp::bench {

int SpawnAndPrintRankZero(const char* program, int world_size, const launch::RankFn& fn,
                          std::chrono::seconds deadline) {
  std::fflush(stdout);
  launch::SpawnOptions so;
  so.deadline = deadline;
  so.fail_fast = true;
  so.run_id = program;
  const launch::RunResult result = launch::SpawnRanks(world_size, fn, so);
  if (!result.ranks.empty()) std::fputs(result.ranks[0].stdout_text.c_str(), stdout);
  if (result.all_ok()) return 0;
  std::fprintf(stderr, "%s: the run failed:\n%s", program, result.Summary().c_str());
  for (const launch::RankOutcome& r : result.ranks) {
    if (!r.ok()) std::fprintf(stderr, "--- rank %d ---\n%s", r.rank, r.stderr_text.c_str());
  }
  return 1;
}

}  // namespace ddp::bench

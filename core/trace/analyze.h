// The analyzer: every rank's dump in, one verdict out.
//
// Entries are matched across ranks by communicator name and sequence number
// (collectives are matched by order, on every engine). The first collective
// where the ranks part ways decides the verdict, in this order of classes:
//   op type / dtype / size / arguments   ranks that entered #N disagree on
//                                        what #N is (root or reduction for
//                                        "arguments")
//   missing ranks                        some ranks never entered #N
//   state                                every rank that dumped entered #N
//                                        with the same signature, but it did
//                                        not complete everywhere: some rank
//                                        sent no dump (stopped, dead,
//                                        unreachable), some completed while
//                                        others wait, or none completed
// The verdict is one line that names the collective, who is where, and the
// call site, e.g.
//   collective #8 (allreduce float64 x497): ranks [1, 2, 3] never entered;
//   rank 0 timed out after 2.01 s at repro/drop_last_hang/hang_run.cc:142
// then the class, then each rank's last entries with their call sites.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results/json.h"
#include "core/trace/model.h"

namespace ddp::trace {

struct AnalyzeOptions {
  std::string prefer_comm;  // analysed first (the communicator that failed)
  int last_entries = 3;     // per rank, in the report
  // Per rank (may be shorter than the world): why its dump is missing, when
  // the caller knows better than "no dump".
  std::vector<std::string> no_dump_notes;
};

struct Analysis {
  bool mismatch = false;   // false: the dumps agree (every collective matched and completed)
  std::string klass;       // "op type", "dtype", "size", "arguments", "missing ranks", "state"
  std::string comm;        // the communicator of the verdict
  int64_t seq = -1;        // its collective
  std::vector<int> culprits;
  std::vector<int> no_dump;  // ranks without a dump
  std::string verdict;       // one line
  std::string report;        // the verdict, the class, each rank's last entries
  results::Json json;        // the same, for machines
};

// dumps[r]: rank r's dump, or nullopt when it sent none. The world size is
// dumps.size().
Analysis Analyze(const std::vector<std::optional<RankDump>>& dumps,
                 const AnalyzeOptions& options = {});

// "rank 2" or "ranks [0, 1, 3]".
std::string RankSet(const std::vector<int>& ranks);

}  // namespace ddp::trace

// The verdict on a PyTorch job's Flight Recorder dumps (fr_dump.h): per
// process group, the first collective where the ranks part ways, who is at
// fault, and where each rank is in the user's code.
//
// Collectives are matched by process group name and collective_seq_id, as
// PyTorch's own analyzer does. Classes, in the order they are looked for at
// each collective:
//   op        ranks entered different collectives (all_reduce vs barrier)
//   dtype     same op, different element types
//   size      same op, different element counts -- by what the op requires:
//             all_reduce, broadcast, reduce, all_gather, gather compare each
//             rank's input numel; reduce_scatter, scatter the output numel;
//             all_to_all only the totals (its per-rank splits are free), and
//             shapes never (an all_reduce of [2, 3] and of [6] is one call)
//   missing   some members never entered it
//   no dump   every dump agrees, but members sent none (killed, hung hard)
// Culprits: the ranks outside the largest agreeing group; when the ranks
// split evenly, the ones that never entered (they hold the others up).
#pragma once

#include <string>
#include <vector>

#include "core/results/json.h"
#include "tools/trace/fr_dump.h"

namespace ddp::trace::fr {

struct Position {
  std::vector<int> ranks;
  std::string text;  // "gloo:all_reduce in [[8]] Float, not completed, at f.py:33 (step)"
};

struct GroupVerdict {
  std::string pg, desc;
  std::vector<int> members;
  bool healthy = true;
  std::string klass;  // "", "op", "dtype", "size", "missing", "no dump"
  int64_t seq = -1;
  std::string op;
  std::vector<int> culprits;
  int64_t collectives = 0;          // the highest seq any member entered
  std::string line;                 // one line
  std::vector<Position> positions;  // everyone at `seq`
};

struct Analysis {
  bool healthy = true;
  std::vector<int> culprits;  // of the first unhealthy group
  std::string verdict;        // one line
  std::vector<GroupVerdict> groups;
  std::vector<int> no_dump;
  std::string report;
  results::Json json;
};

// `only_pg`: analyse that process group alone (empty: all).
Analysis Analyze(const DirDumps& dumps, const std::string& only_pg = "");

// Each rank's last collective as "file:line (function)", or "" (no frames).
std::string SiteOf(const Entry& e);

}  // namespace ddp::trace::fr

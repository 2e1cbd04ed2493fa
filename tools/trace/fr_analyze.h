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
//
// Subgroups: a group's members are the world for the default group, the
// ranks its named pg_config entry lists (NCCL), else the ranks that recorded
// a collective in it (gloo); no rank outside a group is judged in it. A
// member missing from a collective because it waits in another group's
// unfinished collective (its last entry is there) is held, not late: it is
// neither counted nor blamed, and a group whose missing members are all held
// is a consequence of the other group, not a finding. What remains are the
// findings, one per group gone wrong on its own (two groups hung at once:
// two findings), and one per deadlock, where groups hold each other's
// members (the ranks entered the collectives in different orders).
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

// A member that never entered a group's collective because it is in
// another group's unfinished one.
struct Held {
  int rank = 0;
  std::string pg;  // where it is
  int64_t seq = 0;
  std::string op;
};

struct GroupVerdict {
  std::string pg, desc;
  std::vector<int> members;
  std::string members_from;  // "world" (default group), "pg_config", "entries"
  bool healthy = true;
  // "", "op", "dtype", "size", "missing", "no dump", or "held": the members
  // missing from `seq` all wait in other groups (a consequence).
  std::string klass;
  int64_t seq = -1;
  std::string op;
  std::vector<int> culprits;
  std::vector<Held> held;           // members missing from `seq`, held elsewhere
  int64_t collectives = 0;          // the highest seq any member entered
  std::string line;                 // one line
  std::vector<Position> positions;  // every member at `seq`
};

// A cause: one group gone wrong on its own, or a deadlock across groups.
struct Finding {
  std::string klass;                // the group's class, or "deadlock"
  std::vector<std::size_t> groups;  // indices into Analysis::groups
  std::vector<int> culprits;
  std::string line;  // one line, with each culprit's call site
};

struct Analysis {
  bool healthy = true;
  std::vector<int> culprits;  // of every finding
  std::string verdict;        // one line
  std::vector<GroupVerdict> groups;
  std::vector<Finding> findings;  // the one that went wrong first, first
  std::vector<int> no_dump;
  std::string report;
  results::Json json;
};

// `only_pg`: report that process group alone (empty: all); every group is
// still read, to tell a held member from a late one.
Analysis Analyze(const DirDumps& dumps, const std::string& only_pg = "");

// Each rank's last collective as "file:line (function)", or "" (no frames).
std::string SiteOf(const Entry& e);

}  // namespace ddp::trace::fr

#include "tools/trace/fr_analyze.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace ddp::trace::fr {
namespace {

using results::Json;

std::string Shapes(const std::vector<std::vector<int64_t>>& sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    s += i ? ", [" : "[";
    for (std::size_t d = 0; d < sizes[i].size(); ++d)
      s += (d ? ", " : "") + std::to_string(sizes[i][d]);
    s += "]";
  }
  return s + "]";
}

std::string JoinStr(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = d != 0 && n > INT64_MAX / d ? INT64_MAX : n * d;
  return n;
}

std::vector<int64_t> Numels(const std::vector<std::vector<int64_t>>& sizes) {
  std::vector<int64_t> out;
  for (const auto& s : sizes) out.push_back(Numel(s));
  return out;
}

int64_t Total(const std::vector<std::vector<int64_t>>& sizes) {
  int64_t t = 0;
  for (const auto& s : sizes) t += Numel(s);
  return t;
}

bool Among(const std::string& op, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return op == n; });
}

bool IsAllToAll(const std::string& op) {
  return op.rfind("all_to_all", 0) == 0 || op == "alltoall_base";
}

// What must be equal across ranks for the sizes to agree, by op ("" when
// nothing per rank is: barrier, all_to_all).
std::string SizeKey(const Entry& e) {
  const std::string op = e.Op();
  if (IsAllToAll(op) || Among(op, {"barrier", "split", "new_window"})) return "";
  std::vector<int64_t> n;
  if (op.find("reduce_scatter") != std::string::npos || op == "scatter") {
    n = Numels(e.output_sizes);
  } else {
    n = Numels(e.input_sizes);
  }
  if (n.empty()) return "";  // e.g. gather/scatter off the root
  std::string k;
  for (int64_t x : n) k += std::to_string(x) + ",";
  return k;
}

std::string DtypeKey(const Entry& e) {
  std::set<std::string> d(e.input_dtypes.begin(), e.input_dtypes.end());
  if (d.empty()) d.insert(e.output_dtypes.begin(), e.output_dtypes.end());
  return JoinStr({d.begin(), d.end()});
}

// "rank 2", "ranks [0, 1]", "ranks [0-16, 18-63]": runs of three or more
// are written as ranges, so a verdict on 64 ranks stays one readable line.
std::string Ranks(const std::vector<int>& r) {
  if (r.size() == 1) return "rank " + std::to_string(r[0]);
  std::string s;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(r[i]);
    if (j - i >= 2) {
      s += "-" + std::to_string(r[j]);
      i = j + 1;
    } else {
      ++i;
    }
  }
  return "ranks [" + s + "]";
}

// One member's record of one process group.
struct Member {
  int rank = 0;
  const Dump* dump = nullptr;
  std::unordered_map<int64_t, const Entry*> by_seq;
  int64_t last = 0;  // highest seq entered (0: none)
  int64_t first = 0;
  const Entry* At(int64_t seq) const {
    auto it = by_seq.find(seq);
    return it == by_seq.end() ? nullptr : it->second;
  }
};

std::string Completion(const Member& m, const Entry& e) {
  if (e.state == "completed") return "completed";
  auto it = m.dump->last_completed.find(std::to_string(e.pg_id));
  if (it == m.dump->last_completed.end()) return e.state;
  return e.seq <= it->second ? "completed" : "not completed";
}

std::string Describe(const Member& m, const Entry& e) {
  std::string s = e.profiling_name + " in " + Shapes(e.input_sizes);
  if (e.output_sizes != e.input_sizes) s += " out " + Shapes(e.output_sizes);
  const std::string d = DtypeKey(e);
  if (!d.empty()) s += " " + d;
  s += ", " + Completion(m, e);
  const std::string site = SiteOf(e);
  if (!site.empty()) s += ", at " + site;
  return s;
}

// Groups ranks by a key, largest group first (ties: lowest rank first).
std::vector<std::pair<std::string, std::vector<int>>> GroupBy(
    const std::vector<std::pair<int, std::string>>& keyed) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (const auto& [rank, key] : keyed) {
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) {
      groups.push_back({key, {}});
      it = groups.end() - 1;
    }
    it->second.push_back(rank);
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  return groups;
}

// Ranks outside the one largest group; with no single largest group, every
// group but the one holding the lowest rank (said "no majority" in the line).
std::vector<int> Outliers(const std::vector<std::pair<std::string, std::vector<int>>>& groups,
                          bool* tie) {
  std::vector<int> out;
  *tie = groups.size() > 1 && groups[0].second.size() == groups[1].second.size();
  for (std::size_t i = 1; i < groups.size(); ++i)
    out.insert(out.end(), groups[i].second.begin(), groups[i].second.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::string GroupName(const std::string& pg, const std::string& desc,
                      const std::vector<int>& members) {
  const bool named = !desc.empty() && desc != "undefined";
  return "process group " + pg + " (" + (named ? desc + ", " : "") +
         (members.empty() ? "no members known" : Ranks(members)) + ")";
}

// `held`: ranks that wait in another group's unfinished collective.
GroupVerdict AnalyzeGroup(const DirDumps& dd, const std::string& pg, const std::string& desc,
                          const std::vector<int>& members, const std::map<int, Held>& held) {
  GroupVerdict v;
  v.pg = pg;
  v.desc = desc;
  v.members = members;
  std::vector<Member> ms;
  std::vector<int> no_dump;
  for (int r : members) {
    Member m;
    m.rank = r;
    const auto& d = dd.by_rank[static_cast<std::size_t>(r)];
    if (!d) {
      no_dump.push_back(r);
      continue;
    }
    m.dump = &*d;
    for (const Entry& e : d->entries) {
      if (e.pg_name != pg || e.is_p2p || e.seq <= 0) continue;
      m.by_seq[e.seq] = &e;
    }
    for (const auto& [seq, e] : m.by_seq) {
      m.first = m.first == 0 ? seq : std::min(m.first, seq);
      m.last = std::max(m.last, seq);
    }
    ms.push_back(std::move(m));
  }
  int64_t lo = 1, hi = 0;
  for (const Member& m : ms) {
    if (!m.by_seq.empty()) lo = std::max(lo, m.first);
    hi = std::max(hi, m.last);
  }
  v.collectives = hi;
  auto where_never = [&](const Member& m) {
    if (m.last == 0) return std::string("never entered any collective of this group");
    const Entry* e = m.At(m.last);
    return "never entered it; last: #" + std::to_string(m.last) + " " + (e ? Describe(m, *e) : "");
  };
  auto positions = [&](int64_t seq) {
    std::vector<std::pair<int, std::string>> keyed;
    for (const Member& m : ms) {
      const Entry* e = m.At(seq);
      auto h = held.find(m.rank);
      keyed.push_back({m.rank, e               ? Describe(m, *e)
                               : m.last >= seq ? "no record (overwritten)"
                               : h != held.end()
                                   ? "held in process group " + h->second.pg + " #" +
                                         std::to_string(h->second.seq) + " (" + h->second.op + ")"
                                   : where_never(m)});
    }
    for (int r : no_dump) keyed.push_back({r, "no dump (killed, hung hard, or its dump was lost)"});
    std::sort(keyed.begin(), keyed.end());
    std::vector<Position> out;
    for (const auto& [key, ranks] : GroupBy(keyed)) out.push_back({ranks, key});
    std::sort(out.begin(), out.end(),
              [](const Position& a, const Position& b) { return a.ranks < b.ranks; });
    return out;
  };
  const std::string name = GroupName(pg, desc, members);
  // Only the collectives someone recorded, in order: the ids come from the
  // files, and a hostile 10^18 must not become a loop of 10^18 steps.
  std::vector<int64_t> seqs;
  for (const Member& m : ms) {
    for (const auto& [seq, e] : m.by_seq) {
      if (seq >= lo) seqs.push_back(seq);
    }
  }
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  for (const int64_t seq : seqs) {
    std::vector<std::pair<int, const Entry*>> in;
    std::vector<int> never;
    for (const Member& m : ms) {
      if (const Entry* e = m.At(seq)) {
        in.push_back({m.rank, e});
      } else if (m.last < seq) {
        never.push_back(m.rank);
      }
    }
    if (in.empty()) continue;
    // The common case first: every rank that entered recorded the very same
    // call, so nothing can differ but who is missing.
    const Entry& e0 = *in[0].second;
    const bool identical = std::all_of(in.begin(), in.end(), [&](const auto& p) {
      const Entry& e = *p.second;
      return e.profiling_name == e0.profiling_name && e.input_sizes == e0.input_sizes &&
             e.output_sizes == e0.output_sizes && e.input_dtypes == e0.input_dtypes &&
             e.output_dtypes == e0.output_dtypes;
    });
    const std::string op = in[0].second->Op();
    // Ranks grouped by what they entered: the op first (nothing else is
    // comparable across different ops), then dtype and size together, so
    // that one rank off in dtype and another off in size are both named.
    auto mismatch = [&](const std::string& klass,
                        const std::vector<std::pair<int, std::string>>& keyed) {
      const auto groups = GroupBy(keyed);
      if (groups.size() < 2) return false;
      bool tie = false;
      v.healthy = false;
      v.klass = klass;
      v.seq = seq;
      v.op = op;
      v.culprits = Outliers(groups, &tie);
      std::vector<std::string> parts;
      for (const auto& [k, ranks] : groups) parts.push_back(Ranks(ranks) + " " + k);
      v.line = name + ", collective #" + std::to_string(seq) + ": " + klass +
               " mismatch: " + JoinStr(parts, " vs ") + (tie ? " (no majority)" : "");
      v.positions = positions(seq);
      return true;
    };
    if (!identical) {
      std::vector<std::pair<int, std::string>> by_op, by_sig;
      bool dtypes_differ = false, sizes_differ = false;
      std::string dtype0, size0;
      for (const auto& [r, e] : in) {
        by_op.push_back({r, e->profiling_name});
        const bool rootless = Among(e->Op(), {"gather", "scatter"}) && e->input_dtypes.empty();
        const std::string d = rootless ? "" : DtypeKey(*e);
        std::string n = SizeKey(*e);
        if (!n.empty()) n = "x" + n.substr(0, n.size() - 1);
        if (by_sig.empty()) dtype0 = d, size0 = n;
        dtypes_differ |= !d.empty() && !dtype0.empty() && d != dtype0;
        sizes_differ |= !n.empty() && !size0.empty() && n != size0;
        if (!d.empty() || !n.empty())
          by_sig.push_back({r, d + (d.empty() || n.empty() ? "" : " ") + n});
      }
      const std::string sig_class = dtypes_differ && sizes_differ ? "dtype and size"
                                    : dtypes_differ               ? "dtype"
                                                                  : "size";
      if (mismatch("op", by_op) || ((dtypes_differ || sizes_differ) && mismatch(sig_class, by_sig)))
        return v;
    }
    // all_to_all: only the totals must agree, once every member is in.
    if (IsAllToAll(op) && never.empty() && no_dump.empty()) {
      int64_t sent = 0, received = 0;
      for (const auto& [r, e] : in)
        sent += Total(e->input_sizes), received += Total(e->output_sizes);
      if (sent != received) {
        v.healthy = false;
        v.klass = "size";
        v.seq = seq;
        v.op = op;
        v.line = name + ", collective #" + std::to_string(seq) + ": size mismatch: " + op +
                 " sends " + std::to_string(sent) + " elements in all, receives " +
                 std::to_string(received);
        v.positions = positions(seq);
        return v;
      }
    }
    if (!never.empty()) {
      std::vector<int> entered, away;
      for (const auto& p : in) entered.push_back(p.first);
      // Held members are not late: they wait elsewhere (reported by where).
      std::map<std::string, std::vector<int>> held_in;  // "process group 1 #3" -> ranks
      for (int r : never) {
        auto h = held.find(r);
        if (h == held.end()) {
          away.push_back(r);
          continue;
        }
        v.held.push_back(h->second);
        held_in["process group " + h->second.pg + " #" + std::to_string(h->second.seq)].push_back(
            r);
      }
      std::string held_text;
      for (const auto& [where, ranks] : held_in)
        held_text +=
            "; " + Ranks(ranks) + (ranks.size() == 1 ? " is" : " are") + " held in " + where;
      v.healthy = false;
      v.seq = seq;
      v.op = op;
      v.positions = positions(seq);
      const std::string head = name + ", collective #" + std::to_string(seq) + " (" + op +
                               "): " + Ranks(entered) + " entered it";
      if (away.empty()) {
        v.klass = "held";
        v.line = head + held_text + " (a consequence: this group waits on that one)";
        return v;
      }
      v.klass = "missing";
      // The smaller side is out of step; on an even split, the ranks that
      // never came are the ones holding the others up.
      v.culprits = entered.size() < away.size() ? entered : away;
      v.line = head + ", " + Ranks(away) + " never did" + held_text +
               (entered.size() == away.size()
                    ? " (an even split: the dumps cannot tell one collective too many from one "
                      "too few; blamed: the ranks that never came)"
                    : "");
      return v;
    }
  }
  if (!no_dump.empty()) {
    v.healthy = false;
    v.klass = "no dump";
    v.seq = hi;
    v.culprits = no_dump;
    std::vector<int> dumped;
    for (const Member& m : ms) dumped.push_back(m.rank);
    v.line = name + ": no dump from " + Ranks(no_dump) + "; " + Ranks(dumped) + " agree up to #" +
             std::to_string(hi) + " and wait for " + (no_dump.size() == 1 ? "it" : "them");
    v.positions = positions(hi);
    if (hi > 0) v.op = ms.empty() ? "" : (ms[0].At(hi) ? ms[0].At(hi)->Op() : "");
    return v;
  }
  v.line =
      name + ": healthy, " + std::to_string(hi) + " collective" + (hi == 1 ? "" : "s") + " matched";
  return v;
}

Json IntArray(const std::vector<int>& v) {
  Json a = Json::array();
  for (int x : v) a.push_back(x);
  return a;
}

// When the divergent collective was created (the earliest rank's clock):
// of several unhealthy groups, the one that went wrong first is the cause.
int64_t CreatedAt(const DirDumps& dd, const GroupVerdict& g) {
  int64_t t = INT64_MAX;
  for (const auto& d : dd.by_rank) {
    if (!d) continue;
    for (const Entry& e : d->entries) {
      if (e.pg_name == g.pg && e.seq == g.seq && !e.is_p2p) t = std::min(t, e.time_created_ns);
    }
  }
  return t;
}

// A group's members: the world for the default group; the ranks its named
// pg_config entry lists (NCCL: global ranks), when they include every rank
// that recorded a collective in it; else those ranks (gloo's pg_config names
// no group). `from` says which.
std::vector<int> MembersOf(const DirDumps& dd, const std::string& pg, const std::string& desc,
                           const std::set<int>& seen, std::string* from,
                           std::vector<std::string>* notes) {
  const int world = static_cast<int>(dd.by_rank.size());
  std::vector<int> members;
  if (IsDefaultGroup(pg, desc)) {
    for (int r = 0; r < world; ++r) members.push_back(r);
    *from = "world";
    return members;
  }
  for (const auto& d : dd.by_rank) {
    if (!d) continue;
    auto it = d->pg_config.find(pg);
    if (it == d->pg_config.end() || it->second.ranks.empty()) continue;
    std::vector<int> listed = it->second.ranks;
    std::sort(listed.begin(), listed.end());
    if (std::includes(listed.begin(), listed.end(), seen.begin(), seen.end())) {
      members = listed;
      *from = "pg_config";
    } else {
      // Not global ranks (a backend that records group-local ones): the
      // entries say more.
      notes->push_back("pg_config['" + pg + "'] lists " + Ranks(listed) +
                       ", not every rank that recorded a collective in it: its members are "
                       "taken from the entries");
    }
    break;
  }
  if (members.empty()) {
    members.assign(seen.begin(), seen.end());
    *from = "entries";
  }
  members.erase(std::remove_if(members.begin(), members.end(), [&](int r) { return r >= world; }),
                members.end());
  return members;
}

// Each rank's last collective (the highest record_id: one counter per
// process, over all its groups).
std::map<int, const Entry*> LastEntries(const DirDumps& dd) {
  std::map<int, const Entry*> out;
  for (const auto& d : dd.by_rank) {
    if (!d) continue;
    const Entry* last = nullptr;
    for (const Entry& e : d->entries) {
      if (e.is_p2p || e.seq <= 0) continue;
      if (last == nullptr || std::tie(e.record_id, e.time_created_ns) >=
                                 std::tie(last->record_id, last->time_created_ns))
        last = &e;
    }
    if (last != nullptr) out[d->rank] = last;
  }
  return out;
}

// Where rank r is in the user's code for a finding in group `pg` at `seq`:
// its entry there, else its last one in that group, else its last one.
std::string CulpritSite(const DirDumps& dd, int r, const std::string& pg, int64_t seq) {
  const auto& d = dd.by_rank[static_cast<std::size_t>(r)];
  if (!d) return "";
  const Entry* best = nullptr;
  const Entry* last = nullptr;
  for (const Entry& e : d->entries) {
    if (e.is_p2p) continue;
    if (last == nullptr || e.record_id >= last->record_id) last = &e;
    if (e.pg_name != pg || e.seq > seq) continue;
    if (best == nullptr || e.seq > best->seq) best = &e;
  }
  if (best != nullptr && !SiteOf(*best).empty())
    return "rank " + std::to_string(r) + " at " + SiteOf(*best);
  if (last != nullptr && !SiteOf(*last).empty()) {
    return "rank " + std::to_string(r) + " at " + SiteOf(*last) +
           " (its last collective: process group " + last->pg_name + " #" +
           std::to_string(last->seq) + ")";
  }
  return "";
}

}  // namespace

Analysis Analyze(const DirDumps& dd, const std::string& only_pg) {
  Analysis a;
  std::vector<std::string> notes;
  const int world = static_cast<int>(dd.by_rank.size());
  for (int r = 0; r < world; ++r) {
    if (!dd.by_rank[static_cast<std::size_t>(r)]) a.no_dump.push_back(r);
  }
  // Process groups by name (the same on every member; pg_id is local).
  std::map<std::string, std::string> desc;
  std::map<std::string, std::set<int>> seen_on;
  for (const auto& d : dd.by_rank) {
    if (!d) continue;
    for (const Entry& e : d->entries) {
      if (e.is_p2p || e.seq <= 0) continue;
      desc.emplace(e.pg_name, e.pg_desc);
      seen_on[e.pg_name].insert(d->rank);
    }
  }
  std::vector<std::string> names;
  for (const auto& [n, _] : desc) names.push_back(n);
  std::sort(names.begin(), names.end(), [](const std::string& x, const std::string& y) {
    return x.size() != y.size() ? x.size() < y.size() : x < y;  // "2" before "10"
  });
  // Every group on its own first, then again with the members that wait in
  // another group's unfinished collective set aside.
  const std::map<int, Held> none;
  std::map<std::string, std::size_t> index;
  for (const std::string& pg : names) {
    std::string from;
    const std::vector<int> members = MembersOf(dd, pg, desc[pg], seen_on[pg], &from, &notes);
    index[pg] = a.groups.size();
    a.groups.push_back(AnalyzeGroup(dd, pg, desc[pg], members, none));
    a.groups.back().members_from = from;
  }
  std::map<int, Held> held;  // rank -> the unfinished collective it is in
  for (const auto& [r, e] : LastEntries(dd)) {
    const GroupVerdict& g = a.groups[index.at(e->pg_name)];
    if (!g.healthy && g.seq > 0 && g.seq <= e->seq) held[r] = Held{r, g.pg, e->seq, e->Op()};
  }
  for (GroupVerdict& g : a.groups) {
    if (g.klass != "missing") continue;
    std::map<int, Held> elsewhere;
    for (const auto& [r, h] : held) {
      if (h.pg != g.pg) elsewhere[r] = h;
    }
    if (elsewhere.empty()) continue;
    const std::string from = g.members_from;
    g = AnalyzeGroup(dd, g.pg, g.desc, g.members, elsewhere);
    g.members_from = from;
  }

  // Findings: the groups gone wrong on their own; a held group is a
  // consequence when what holds it leads to one of them, and part of a
  // deadlock when it leads only back to held groups.
  const std::size_t n = a.groups.size();
  std::vector<std::vector<std::size_t>> holds(n);  // held group -> the groups holding it
  for (std::size_t i = 0; i < n; ++i) {
    for (const Held& h : a.groups[i].held) holds[i].push_back(index.at(h.pg));
  }
  auto reaches_cause = [&](std::size_t start) {
    std::vector<bool> seen(n, false);
    std::vector<std::size_t> todo = {start};
    while (!todo.empty()) {
      const std::size_t i = todo.back();
      todo.pop_back();
      if (seen[i]) continue;
      seen[i] = true;
      if (!a.groups[i].healthy && a.groups[i].klass != "held") return true;
      todo.insert(todo.end(), holds[i].begin(), holds[i].end());
    }
    return false;
  };
  std::vector<std::size_t> component(n);  // deadlocked groups that hold each other, joined
  for (std::size_t i = 0; i < n; ++i) component[i] = i;
  std::function<std::size_t(std::size_t)> root = [&](std::size_t i) {
    return component[i] == i ? i : component[i] = root(component[i]);
  };
  std::vector<bool> deadlocked(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (a.groups[i].klass == "held" && !reaches_cause(i)) deadlocked[i] = true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j : holds[i]) {
      if (deadlocked[i] && deadlocked[j]) component[root(i)] = root(j);
    }
  }
  std::vector<std::pair<int64_t, Finding>> found;  // by when it went wrong
  for (std::size_t i = 0; i < n; ++i) {
    const GroupVerdict& g = a.groups[i];
    if (g.healthy || g.klass == "held") continue;
    Finding f;
    f.klass = g.klass;
    f.groups = {i};
    f.culprits = g.culprits;
    f.line = g.line;
    std::vector<std::string> at;
    for (int r : f.culprits) {
      const std::string site = CulpritSite(dd, r, g.pg, g.seq);
      if (!site.empty()) at.push_back(site);
    }
    if (!at.empty()) f.line += "; " + JoinStr(at, "; ");
    found.push_back({CreatedAt(dd, g), std::move(f)});
  }
  for (std::size_t c = 0; c < n; ++c) {
    if (!deadlocked[c] || root(c) != c) continue;
    Finding f;
    f.klass = "deadlock";
    std::set<int> ranks;
    std::vector<std::string> parts, at;
    int64_t t = INT64_MAX;
    for (std::size_t i = 0; i < n; ++i) {
      if (!deadlocked[i] || root(i) != c) continue;
      const GroupVerdict& g = a.groups[i];
      f.groups.push_back(i);
      t = std::min(t, CreatedAt(dd, g));
      std::vector<std::string> waits_for;
      for (const Held& h : g.held) {
        ranks.insert(h.rank);
        waits_for.push_back("rank " + std::to_string(h.rank) + ", which is in process group " +
                            h.pg + " #" + std::to_string(h.seq));
      }
      parts.push_back("process group " + g.pg + " #" + std::to_string(g.seq) + " (" + g.op +
                      ") waits for " + JoinStr(waits_for, " and "));
    }
    f.culprits.assign(ranks.begin(), ranks.end());
    for (int r : f.culprits) {
      const Held& h = held.at(r);
      const std::string site = CulpritSite(dd, r, h.pg, h.seq);
      if (!site.empty()) at.push_back(site);
    }
    f.line = "deadlock across process groups: " + JoinStr(parts, "; ") +
             " (the ranks entered these collectives in different orders; the dumps cannot tell "
             "which one left the program's order)" +
             (at.empty() ? "" : "; " + JoinStr(at, "; "));
    found.push_back({t, std::move(f)});
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (auto& [t, f] : found) a.findings.push_back(std::move(f));

  if (!only_pg.empty()) {
    // The one group asked for: its findings, or what holds it.
    std::vector<Finding> mine;
    const std::size_t i = index.at(only_pg);
    for (Finding& f : a.findings) {
      if (std::find(f.groups.begin(), f.groups.end(), i) != f.groups.end()) mine.push_back(f);
    }
    if (mine.empty() && !a.groups[i].healthy) mine.push_back({"held", {i}, {}, a.groups[i].line});
    a.findings = mine;
  }
  std::set<int> all_culprits;
  for (const Finding& f : a.findings) all_culprits.insert(f.culprits.begin(), f.culprits.end());
  a.culprits.assign(all_culprits.begin(), all_culprits.end());
  const std::size_t shown = only_pg.empty() ? n : 1;
  if (!a.findings.empty()) {
    a.healthy = false;
    a.verdict = a.culprits.empty() ? std::string("problem") : "culprit " + Ranks(a.culprits);
    if (a.findings.size() == 1) {
      a.verdict += ": " + a.findings[0].line;
    } else {
      a.verdict += ": " + std::to_string(a.findings.size()) + " findings:";
      for (std::size_t k = 0; k < a.findings.size(); ++k)
        a.verdict += " (" + std::to_string(k + 1) + ") " + a.findings[k].line;
    }
  } else if (a.groups.empty()) {
    a.healthy = a.no_dump.empty();
    a.culprits = a.no_dump;
    a.verdict = a.no_dump.empty() ? "healthy: no collective recorded"
                                  : "culprit " + Ranks(a.no_dump) +
                                        ": no dump, and no collective recorded by the others";
  } else {
    a.verdict = "healthy: " + std::to_string(world) + " ranks, " + std::to_string(shown) +
                " process group" + (shown == 1 ? "" : "s") + ", every collective matched";
  }

  std::string rep = a.verdict + "\n";
  rep += "process groups:\n";
  for (const GroupVerdict& g : a.groups) {
    if (only_pg.empty() || g.pg == only_pg) rep += "  " + g.line + "\n";
  }
  for (const Finding& f : a.findings) {
    for (std::size_t i : f.groups) {
      const GroupVerdict& g = a.groups[i];
      if (g.positions.empty()) continue;
      rep += "first divergent collective: " + GroupName(g.pg, g.desc, g.members) + ", #" +
             std::to_string(g.seq) + (g.op.empty() ? "" : " (" + g.op + ")") + ":\n";
      for (const Position& p : g.positions) rep += "  " + Ranks(p.ranks) + ": " + p.text + "\n";
    }
  }
  rep += "call sites (each rank's last collective):\n";
  Json sites = Json::array();
  for (int r = 0; r < world; ++r) {
    const auto& d = dd.by_rank[static_cast<std::size_t>(r)];
    Json sj;
    sj["rank"] = r;
    if (!d) {
      rep += "  rank " + std::to_string(r) + ": no dump\n";
      sites.push_back(sj);
      continue;
    }
    const Entry* last = nullptr;
    for (const Entry& e : d->entries) {
      if (last == nullptr || e.time_created_ns >= last->time_created_ns) last = &e;
    }
    if (last == nullptr) {
      rep += "  rank " + std::to_string(r) + ": no collective recorded\n";
    } else {
      const std::string site = SiteOf(*last);
      rep += "  rank " + std::to_string(r) + ": process group " + last->pg_name + " #" +
             std::to_string(last->seq) + " " + last->profiling_name + " at " +
             (site.empty() ? "(no frames in this dump)" : site) + "\n";
      if (const Frame* f = last->UserFrame()) {
        sj["file"] = f->file;
        sj["line"] = static_cast<long long>(f->line);
        sj["function"] = f->name;
      }
      sj["pg"] = last->pg_name;
      sj["seq"] = static_cast<long long>(last->seq);
    }
    sites.push_back(sj);
  }
  for (const std::string& n : dd.notes) rep += "note: " + n + "\n";
  for (const std::string& n : notes) rep += "note: " + n + "\n";
  a.report = rep;

  Json j;
  j["format"] = "pytorch";
  j["healthy"] = a.healthy;
  j["verdict"] = a.verdict;
  j["culprits"] = IntArray(a.culprits);
  j["world_size"] = world;
  j["no_dump"] = IntArray(a.no_dump);
  Json groups = Json::array();
  for (const GroupVerdict& g : a.groups) {
    if (!only_pg.empty() && g.pg != only_pg) continue;
    Json gj;
    gj["pg"] = g.pg;
    gj["desc"] = g.desc;
    gj["members"] = IntArray(g.members);
    gj["members_from"] = g.members_from;
    gj["healthy"] = g.healthy;
    gj["class"] = g.klass;
    gj["seq"] = static_cast<long long>(g.seq);
    gj["op"] = g.op;
    gj["culprits"] = IntArray(g.culprits);
    gj["line"] = g.line;
    Json ps = Json::array();
    for (const Position& p : g.positions) {
      Json pj;
      pj["ranks"] = IntArray(p.ranks);
      pj["where"] = p.text;
      ps.push_back(pj);
    }
    gj["positions"] = ps;
    Json hj = Json::array();
    for (const Held& h : g.held) {
      Json x;
      x["rank"] = h.rank;
      x["pg"] = h.pg;
      x["seq"] = static_cast<long long>(h.seq);
      x["op"] = h.op;
      hj.push_back(x);
    }
    gj["held"] = hj;
    groups.push_back(gj);
  }
  j["groups"] = groups;
  Json findings = Json::array();
  for (const Finding& f : a.findings) {
    Json fj;
    fj["class"] = f.klass;
    Json pgs = Json::array();
    for (std::size_t i : f.groups) pgs.push_back(a.groups[i].pg);
    fj["pgs"] = pgs;
    fj["culprits"] = IntArray(f.culprits);
    fj["line"] = f.line;
    findings.push_back(fj);
  }
  j["findings"] = findings;
  j["sites"] = sites;
  a.json = j;
  return a;
}

std::string SiteOf(const Entry& e) {
  const Frame* f = e.UserFrame();
  if (f == nullptr) return "";
  return f->file + ":" + std::to_string(f->line) + " (" + f->name + ")";
}

}  // namespace ddp::trace::fr

#include "core/trace/analyze.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/trace/dump_json.h"

namespace ddp::trace {
namespace {

using results::Json;


std::string Fixed(double v, const char* fmt = "%.2f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// "0.31 ms" below a second, "2.01 s" above.
std::string Duration(double s) { return s < 1 ? Fixed(s * 1000) + " ms" : Fixed(s) + " s"; }

// One rank's view of the communicator under analysis.
struct View {
  int rank = 0;
  const RankDump* dump = nullptr;   // null: no dump
  const CommTrace* trace = nullptr;  // null: no such communicator in its dump

  bool has_trace() const { return trace != nullptr; }
  int64_t Oldest() const {
    return trace->entries.empty() ? trace->next_seq : trace->entries.front().seq;
  }
  int64_t Last() const { return trace->next_seq - 1; }
  const TraceEntry* At(int64_t seq) const {
    if (trace->entries.empty()) return nullptr;
    const int64_t first = trace->entries.front().seq;
    if (seq < first || seq > trace->entries.back().seq) return nullptr;
    return &trace->entries[static_cast<std::size_t>(seq - first)];
  }
};

// How long an entry has been (or was) in its state, and the words for it.
struct StateText {
  std::string words;  // "timed out after", "waiting since", "completed in", ...
  double seconds = 0;
};

StateText StateOf(const View& v, const TraceEntry& e) {
  const double end = e.exit_unix_s ? *e.exit_unix_s : v.dump->dump_unix_s;
  const double s = std::max(0.0, end - e.enter_unix_s);
  switch (e.state) {
    case State::kEntered: return {"waiting since", s};
    case State::kCompleted: return {"completed in", s};
    case State::kTimedOut: return {"timed out after", s};
    case State::kPeerFailed: return {"failed (peer error) after", s};
    case State::kCheckFailed: return {"stopped by checked mode after", s};
  }
  return {"?", s};
}

// Ranks that are in the same place at the collective under analysis.
struct Group {
  std::vector<int> ranks;
  const TraceEntry* entry = nullptr;  // null: never entered / no dump / no communicator
  std::string words;
  double min_s = 0, max_s = 0;
  std::string text() const {
    if (entry == nullptr) return RankSet(ranks) + " " + words;
    const bool same = Duration(min_s) == Duration(max_s);
    return RankSet(ranks) + " " + words + " " +
           (same ? Duration(max_s) : Duration(min_s) + " to " + Duration(max_s)) + " at " +
           FileLine(entry->site);
  }
};

// Groups the ranks at collective `seq` by where they are.
class Positions {
 public:
  Positions(const std::vector<View>& views, int64_t seq) {
    for (const View& v : views) {
      if (v.dump == nullptr) {
        Add(no_dump_, "nodump", v.rank, nullptr, "");
      } else if (!v.has_trace()) {
        Add(other_, "nocomm", v.rank, nullptr, "has no such communicator in its dump");
      } else if (const TraceEntry* e = v.At(seq)) {
        const StateText st = StateOf(v, *e);
        const std::string key = Describe(*e) + "|" + Name(e->state) + "|" + FileLine(e->site);
        Group& g = Add(at_, key, v.rank, e, st.words);
        g.min_s = g.ranks.size() == 1 ? st.seconds : std::min(g.min_s, st.seconds);
        g.max_s = std::max(g.max_s, st.seconds);
        entered_.push_back(v.rank);
      } else if (v.Last() < seq) {
        std::string last = v.Last() < 0 ? "entered no collective" : "last: #" + std::to_string(v.Last());
        if (const TraceEntry* e = v.At(v.Last())) {
          last += " " + std::string(Name(e->state)) + " at " + FileLine(e->site);
        }
        Add(never_, last + v.trace->state, v.rank, nullptr,
            "never entered (" + last + "; communicator " + v.trace->state + ")");
      } else {
        Add(other_, "dropped", v.rank, nullptr, "has no entry for it (overwritten)");
      }
    }
  }
  const std::vector<Group>& at() const { return at_; }
  const std::vector<Group>& never() const { return never_; }
  const std::vector<Group>& no_dump() const { return no_dump_; }
  const std::vector<Group>& other() const { return other_; }
  const std::vector<int>& entered() const { return entered_; }

 private:
  Group& Add(std::vector<Group>& groups, const std::string& key, int rank, const TraceEntry* e,
             const std::string& words) {
    auto& index = keys_[&groups];
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.push_back(Group{{}, e, words});
    }
    Group& g = groups[it->second];
    g.ranks.push_back(rank);
    return g;
  }
  std::vector<Group> at_, never_, no_dump_, other_;
  std::vector<int> entered_;
  std::map<const void*, std::map<std::string, std::size_t>> keys_;
};

// The class of disagreement among the entries of the ranks that entered, or "".
std::string SignatureClass(const std::vector<View>& views, int64_t seq) {
  std::vector<std::pair<int, const TraceEntry*>> in;
  for (const View& v : views) {
    if (v.has_trace() && v.At(seq) != nullptr) in.push_back({v.rank, v.At(seq)});
  }
  if (in.empty()) return "";
  auto differ = [&](auto key) {
    return std::any_of(in.begin(), in.end(),
                       [&](const auto& p) { return key(*p.second) != key(*in[0].second); });
  };
  if (differ([](const TraceEntry& e) { return e.op; })) return "op type";
  if (in[0].second->op == comm::OpKind::kBarrier) return "";
  if (differ([](const TraceEntry& e) { return e.dtype; })) return "dtype";
  if (in[0].second->op == comm::OpKind::kAllgatherv) {
    if (differ([](const TraceEntry& e) { return e.counts; })) return "size";
    for (const auto& [rank, e] : in) {
      if (static_cast<std::size_t>(rank) < e->counts.size() &&
          e->counts[static_cast<std::size_t>(rank)] != e->count) {
        return "size";
      }
    }
  } else if (differ([](const TraceEntry& e) { return e.count; })) {
    return "size";
  }
  if (differ([](const TraceEntry& e) { return e.root; }) ||
      differ([](const TraceEntry& e) { return e.reduce; })) {
    return "arguments";
  }
  return "";
}

// The smallest groups (ties: those without the lowest rank) are the odd ones out.
std::vector<int> Minority(const std::vector<Group>& groups) {
  if (groups.size() < 2) return {};
  std::size_t smallest = groups[0].ranks.size();
  for (const Group& g : groups) smallest = std::min(smallest, g.ranks.size());
  std::vector<int> out;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].ranks.size() != smallest) continue;
    if (i == 0 && groups.size() == 2 && groups[1].ranks.size() == smallest) continue;
    out.insert(out.end(), groups[i].ranks.begin(), groups[i].ranks.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Join(const std::vector<std::string>& parts, const char* sep = "; ") {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

std::string NoDumpText(const std::vector<int>& ranks, const AnalyzeOptions& o) {
  // One note for the group when every rank in it has the same (the ranks
  // of one unreachable host), else the generic words.
  auto note = [&](int r) {
    return static_cast<std::size_t>(r) < o.no_dump_notes.size()
               ? o.no_dump_notes[static_cast<std::size_t>(r)]
               : std::string();
  };
  std::string why = kNoDumpWhy;
  const bool same = std::all_of(ranks.begin(), ranks.end(),
                                [&](int r) { return note(r) == note(ranks[0]); });
  if (!ranks.empty() && same && !note(ranks[0]).empty()) why = note(ranks[0]);
  return "no dump from " + RankSet(ranks) + " (" + why + ")";
}

struct Finding {
  bool found = false;
  std::string klass;
  int64_t seq = -1;
  std::string verdict;
  std::vector<int> culprits;
  std::vector<Group> groups;  // everyone's position at seq, for the report
  // The first collective, up to the verdict's, that ranks entered from
  // different lines of code: the desync often starts there (a rank that
  // skipped a call enters the next one from the next call site).
  std::string site_note;
};

// "call sites first differ at #1: ranks [0, 1] at a.cc:79; rank 2 at a.cc:80", or "".
std::string SiteDivergence(const Positions& p, int64_t seq) {
  std::vector<std::string> sites;
  std::map<std::string, std::vector<int>> ranks;
  for (const Group& g : p.at()) {
    const std::string site = FileLine(g.entry->site);
    if (!ranks.count(site)) sites.push_back(site);
    auto& r = ranks[site];
    r.insert(r.end(), g.ranks.begin(), g.ranks.end());
  }
  if (sites.size() < 2) return "";
  std::string s = "call sites first differ at #" + std::to_string(seq) + ": ";
  for (std::size_t i = 0; i < sites.size(); ++i) {
    auto& r = ranks[sites[i]];
    std::sort(r.begin(), r.end());
    s += (i ? "; " : "") + RankSet(r) + " at " + sites[i];
  }
  return s;
}

std::vector<Group> AllGroups(const Positions& p) {
  std::vector<Group> all = p.at();
  for (const auto* gs : {&p.never(), &p.other(), &p.no_dump()}) all.insert(all.end(), gs->begin(), gs->end());
  return all;
}

std::vector<int> Flatten(const std::vector<Group>& groups) {
  std::vector<int> out;
  for (const Group& g : groups) out.insert(out.end(), g.ranks.begin(), g.ranks.end());
  std::sort(out.begin(), out.end());
  return out;
}

// The first place where the ranks of one communicator part ways.
Finding AnalyzeComm(const std::vector<View>& views, const AnalyzeOptions& o) {
  Finding f;
  int64_t lo = 0, hi = -1;
  std::vector<int> no_dump;
  for (const View& v : views) {
    if (v.dump == nullptr) no_dump.push_back(v.rank);
    if (!v.has_trace()) continue;
    lo = std::max(lo, v.Oldest());
    hi = std::max(hi, v.Last());
  }
  const std::string no_dump_tail = no_dump.empty() ? "" : "; " + NoDumpText(no_dump, o);
  auto header = [](int64_t seq, const Positions& p) {
    std::string h = "collective #" + std::to_string(seq);
    if (!p.at().empty()) h += " (" + Describe(*p.at()[0].entry) + ")";
    return h;
  };
  auto at_texts = [](const Positions& p) {
    std::vector<std::string> t;
    for (const Group& g : p.at()) t.push_back(g.text());
    return t;
  };
  // Collective by collective, the first that is not the same completed
  // collective on every rank: signatures, then missing ranks, then states.
  std::string site_note;
  for (int64_t seq = lo; seq <= hi; ++seq) {
    const Positions p(views, seq);
    if (site_note.empty()) site_note = SiteDivergence(p, seq);
    const std::string klass = SignatureClass(views, seq);
    if (!klass.empty()) {
      std::vector<std::string> parts;
      std::vector<Group> sigs;  // by signature and site, ignoring state
      std::map<std::string, std::size_t> index;
      for (const Group& g : p.at()) {
        const std::string key = Describe(*g.entry) + " on |" + FileLine(g.entry->site);
        auto it = index.find(key);
        if (it == index.end()) {
          it = index.emplace(key, sigs.size()).first;
          sigs.push_back(Group{{}, g.entry, ""});
        }
        auto& r = sigs[it->second].ranks;
        r.insert(r.end(), g.ranks.begin(), g.ranks.end());
      }
      for (Group& g : sigs) {
        std::sort(g.ranks.begin(), g.ranks.end());
        parts.push_back(Describe(*g.entry) + " on " + RankSet(g.ranks) + " at " +
                        FileLine(g.entry->site));
      }
      if (!p.never().empty()) parts.push_back(RankSet(Flatten(p.never())) + " never entered");
      f = {true, klass, seq,
           "collective #" + std::to_string(seq) + " (" + klass + " mismatch): " + Join(parts) +
               no_dump_tail,
           Minority(sigs), AllGroups(p), site_note};
      return f;
    }
    if (!p.never().empty()) {
      std::vector<std::string> parts = {RankSet(Flatten(p.never())) + " never entered"};
      for (const auto& t : at_texts(p)) parts.push_back(t);
      f = {true, "missing ranks", seq, header(seq, p) + ": " + Join(parts) + no_dump_tail,
           Flatten(p.never()), AllGroups(p), site_note};
      return f;
    }
    // State: everyone who dumped entered #seq alike, but it did not
    // complete everywhere.
    bool all_completed = true;
    for (const Group& g : p.at()) all_completed &= g.entry->state == State::kCompleted;
    if (all_completed) continue;
    std::vector<std::string> parts;
    std::vector<int> culprits = no_dump;
    if (!no_dump.empty()) parts.push_back(NoDumpText(no_dump, o));
    bool any_completed = false;
    for (const Group& g : p.at()) any_completed |= g.entry->state == State::kCompleted;
    if (no_dump.empty() && !any_completed) parts.push_back("every rank entered, none completed");
    for (const auto& t : at_texts(p)) parts.push_back(t);
    for (const Group& g : p.other()) parts.push_back(g.text());
    if (no_dump.empty() && any_completed) {
      for (const Group& g : p.at()) {
        if (g.entry->state != State::kCompleted) culprits.insert(culprits.end(), g.ranks.begin(), g.ranks.end());
      }
    }
    std::sort(culprits.begin(), culprits.end());
    f = {true, "state", seq, header(seq, p) + ": " + Join(parts), culprits, AllGroups(p), site_note};
    return f;
  }
  // Everything that was dumped matched and completed.
  if (!no_dump.empty() && hi >= 0) {
    const Positions p(views, hi);
    f = {true, "state", hi,
         header(hi, p) + ": " + NoDumpText(no_dump, o) + "; the other ranks completed #" +
             std::to_string(lo) + "-#" + std::to_string(hi) + " in agreement",
         no_dump, AllGroups(p), site_note};
  }
  f.site_note = site_note;
  return f;
}

std::string EntryLine(const View& v, const TraceEntry& e) {
  const StateText st = StateOf(v, e);
  return "#" + std::to_string(e.seq) + " " + Describe(e) + " " + st.words + " " +
         Duration(st.seconds) + " at " + FileLine(e.site) + " (" + ShortFunction(e.site.function) +
         ")";
}

std::string RankHeader(const View& v) {
  const RankDump& d = *v.dump;
  std::string s = "rank " + std::to_string(v.rank) + " (" + d.host + ", pid " +
                  std::to_string(d.pid) + ", dumped on " + d.reason + ")";
  if (!v.has_trace()) return s + ": no such communicator in its dump";
  return s + ": " + v.trace->name + " " + v.trace->state + ", " +
         std::to_string(v.trace->next_seq) + " collective" + (v.trace->next_seq == 1 ? "" : "s") +
         " entered";
}

std::vector<std::string> CommNames(const std::vector<std::optional<RankDump>>& dumps,
                                   const std::string& prefer) {
  std::vector<std::string> names;
  auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  };
  for (const auto& d : dumps) {
    if (d && !prefer.empty() && d->Find(prefer) != nullptr) add(prefer);
  }
  for (const auto& d : dumps) {
    if (!d) continue;
    for (const CommTrace& c : d->comms) add(c.name);
  }
  return names;
}

std::vector<View> Views(const std::vector<std::optional<RankDump>>& dumps, const std::string& comm) {
  std::vector<View> views;
  for (std::size_t r = 0; r < dumps.size(); ++r) {
    View v;
    v.rank = static_cast<int>(r);
    if (dumps[r]) {
      v.dump = &*dumps[r];
      v.trace = dumps[r]->Find(comm);
    }
    views.push_back(v);
  }
  return views;
}

}  // namespace

std::string RankSet(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  std::string s = "ranks [";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

Analysis Analyze(const std::vector<std::optional<RankDump>>& dumps, const AnalyzeOptions& o) {
  Analysis a;
  for (std::size_t r = 0; r < dumps.size(); ++r) {
    if (!dumps[r]) a.no_dump.push_back(static_cast<int>(r));
  }
  const std::vector<std::string> names = CommNames(dumps, o.prefer_comm);
  Finding finding;
  std::vector<View> views;
  for (const std::string& name : names) {
    views = Views(dumps, name);
    finding = AnalyzeComm(views, o);
    if (finding.found) {
      a.comm = name;
      break;
    }
  }
  if (finding.found) {
    a.mismatch = true;
    a.klass = finding.klass;
    a.seq = finding.seq;
    a.culprits = finding.culprits;
    a.verdict = finding.verdict;
  } else if (names.empty()) {
    a.mismatch = true;
    a.klass = "state";
    a.culprits = a.no_dump;
    a.verdict = a.no_dump.size() == dumps.size()
                    ? "no rank sent a dump"
                    : "no collective recorded; " + NoDumpText(a.no_dump, o);
  } else {
    a.comm = names[0];
    views = Views(dumps, a.comm);
    int64_t n = 0;
    for (const View& v : views) n = std::max(n, v.has_trace() ? v.trace->next_seq : 0);
    a.verdict = "no mismatch: " + std::to_string(dumps.size()) + " ranks agree on " +
                std::to_string(names.size()) + " communicator" + (names.size() == 1 ? "" : "s") +
                " (" + a.comm + ": " + std::to_string(n) + " collectives), all completed";
  }

  // The report: verdict, class and everyone's position, each rank's last entries.
  std::string rep = a.verdict + "\n";
  if (a.mismatch) rep += "class: " + a.klass + (a.culprits.empty() ? "" : "; culprit " + RankSet(a.culprits)) + "\n";
  if (!finding.site_note.empty()) rep += finding.site_note + "\n";
  for (const Group& g : finding.groups) {
    if (g.entry != nullptr) {
      rep += "  " + RankSet(g.ranks) + ": " + Describe(*g.entry) + ", " +
             g.text().substr(RankSet(g.ranks).size() + 1) + " (" +
             ShortFunction(g.entry->site.function) + ")\n";
    } else if (g.words.empty()) {
      rep += "  " + NoDumpText(g.ranks, o) + "\n";
    } else {
      rep += "  " + RankSet(g.ranks) + ": " + g.words + "\n";
    }
  }
  Json ranks = Json::array();
  for (const View& v : views) {
    Json rj;
    rj["rank"] = v.rank;
    if (v.dump == nullptr) {
      rep += NoDumpText({v.rank}, o) + "\n";
      rj["dump"] = false;
      ranks.push_back(rj);
      continue;
    }
    rj["dump"] = true;
    rj["host"] = v.dump->host;
    rj["pid"] = static_cast<long long>(v.dump->pid);
    rj["reason"] = v.dump->reason;
    rep += RankHeader(v);
    Json last = Json::array();
    if (v.has_trace()) {
      rj["comm_state"] = v.trace->state;
      rj["next_seq"] = static_cast<long long>(v.trace->next_seq);
      const auto& es = v.trace->entries;
      const std::size_t k = std::min<std::size_t>(es.size(), static_cast<std::size_t>(std::max(0, o.last_entries)));
      rep += k == 0 ? "" : "; last " + std::to_string(k) + ":";
      for (std::size_t i = es.size() - k; i < es.size(); ++i) {
        rep += "\n    " + EntryLine(v, es[i]);
        last.push_back(ToJson(es[i]));
      }
    }
    rep += "\n";
    rj["last_entries"] = last;
    ranks.push_back(rj);
  }
  a.report = rep;

  Json j;
  j["mismatch"] = a.mismatch;
  j["verdict"] = a.verdict;
  j["class"] = a.klass;
  j["comm"] = a.comm;
  j["seq"] = static_cast<long long>(a.seq);
  j["culprits"] = Json(a.culprits);
  j["no_dump"] = Json(a.no_dump);
  j["site_divergence"] = finding.site_note;
  Json groups = Json::array();
  for (const Group& g : finding.groups) {
    Json gj;
    gj["ranks"] = Json(g.ranks);
    if (g.entry != nullptr) {
      gj["entry"] = ToJson(*g.entry);
      gj["state_s"] = g.max_s;
    } else {
      gj["where"] = g.words.empty() ? "no dump" : g.words;
    }
    groups.push_back(gj);
  }
  j["positions"] = groups;
  j["ranks"] = ranks;
  a.json = j;
  return a;
}

}  // namespace ddp::trace

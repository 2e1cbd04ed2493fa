#include "tools/trace/fr_dump.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/results/json.h"
#include "tools/trace/pickle.h"

namespace ddp::trace::fr {
namespace {

using pickle::Value;
using results::Json;

// The same questions asked of a pickle object or a JSON value, so that one
// reader serves both forms.
struct PNode {
  const Value* v;
  bool IsDict() const { return v->Is(Value::Kind::kDict); }
  bool IsList() const { return v->Is(Value::Kind::kList) || v->Is(Value::Kind::kTuple); }
  bool IsStr() const { return v->Is(Value::Kind::kStr); }
  bool IsInt() const { return v->Is(Value::Kind::kInt) || v->Is(Value::Kind::kBool); }
  bool IsNone() const { return v->Is(Value::Kind::kNone); }
  std::optional<PNode> Get(const char* key) const {
    const Value* x = v->Get(key, &hint);
    return x ? std::optional<PNode>(PNode{x}) : std::nullopt;
  }
  mutable uint32_t hint = 0;  // where the last key was found (see Value::Get)
  std::size_t Size() const { return v->items().size(); }
  PNode At(std::size_t i) const { return PNode{v->items()[i]}; }
  std::string Str() const { return std::string(v->s); }
  std::string_view View() const { return v->s; }
  int64_t Int() const { return v->i; }
  // Dict keys and values in order.
  std::vector<std::pair<std::string, PNode>> Items() const {
    std::vector<std::pair<std::string, PNode>> out;
    const auto items = v->items();
    for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
      const Value* key = items[k];
      out.emplace_back(key->Is(Value::Kind::kStr) ? std::string(key->s) : std::to_string(key->i),
                       PNode{items[k + 1]});
    }
    return out;
  }
  const char* Kind() const { return v->KindName(); }
};

struct JNode {
  const Json* v;
  bool IsDict() const { return v->is_object(); }
  bool IsList() const { return v->is_array(); }
  bool IsStr() const { return v->is_string(); }
  bool IsInt() const {
    if (v->is_boolean()) return true;
    if (!v->is_number()) return false;
    const double d = v->get<double>();
    return std::floor(d) == d && std::fabs(d) < 9.0e18;  // an int64, not a cast of 1e300
  }
  bool IsNone() const { return v->is_null(); }
  std::optional<JNode> Get(const char* key) const {
    const Json* x = Find(*v, key);
    return x ? std::optional<JNode>(JNode{x}) : std::nullopt;
  }
  std::size_t Size() const { return v->size(); }
  JNode At(std::size_t i) const { return JNode{&(*v)[i]}; }
  std::string Str() const { return v->get<std::string>(); }
  std::string_view View() const { return v->get<std::string>(); }
  int64_t Int() const {
    return v->is_boolean() ? v->get<bool>() : static_cast<int64_t>(v->get<double>());
  }
  std::vector<std::pair<std::string, JNode>> Items() const {
    std::vector<std::pair<std::string, JNode>> out;
    for (const auto& [k, x] : v->items()) out.emplace_back(k, JNode{&x});
    return out;
  }
  const char* Kind() const {
    if (v->is_object()) return "object";
    if (v->is_array()) return "array";
    if (v->is_string()) return "string";
    if (v->is_null()) return "null";
    return v->is_boolean() ? "bool" : "number";
  }
};

[[noreturn]] void Fail(const std::string& field, const std::string& what) {
  throw DumpError(field + ": " + what);
}

// Memory bound (issue 59): a dump may reuse one memoised object millions of
// times (a pickle of a few bytes per entry), and every reuse would be read
// into a full Entry. So what reading one file keeps (entries, strings,
// shapes) and visits (frames) is counted, and the file is refused once that
// passes kReadFactor x its size (+ 1 MiB): the reader's memory follows the
// file's size, whatever the pickle's structure. Per thread: each file is
// read on one thread (ReadDir).
constexpr std::size_t kReadFactor = 16;
// The pickle decoder's own bound (objects, items, stack, memo), in the same
// terms: a real dump decodes into about 10 x its size.
constexpr std::size_t kDecodeFactor = 32;
thread_local std::size_t t_read_budget = SIZE_MAX;
thread_local std::size_t t_read_limit = SIZE_MAX;

void Spend(std::size_t n) {
  if (n > t_read_budget) {
    throw DumpError("reads into more than " + std::to_string(t_read_limit >> 20) +
                    " MiB (" + std::to_string(kReadFactor) +
                    " x its size + 1 MiB): objects reused too often for a Flight Recorder dump");
  }
  t_read_budget -= n;
}

template <class N>
N Need(const N& dict, const char* key, const std::string& where) {
  auto x = dict.Get(key);
  if (!x) Fail(where + key, "missing");
  return *x;
}

template <class N>
std::string Str(const N& dict, const char* key, const std::string& where) {
  const N x = Need(dict, key, where);
  if (!x.IsStr()) Fail(where + key, std::string("a ") + x.Kind() + ", not a string");
  return x.Str();
}

// An int, or (the JSON form writes some as text) a decimal string.
template <class N>
int64_t IntOf(const N& x, const std::string& field) {
  if (x.IsInt()) return x.Int();
  if (x.IsStr()) {
    const std::string s = x.Str();
    std::size_t used = 0;
    try {
      const long long v = std::stoll(s, &used);
      if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
  }
  Fail(field, std::string("a ") + x.Kind() + ", not an integer");
}

template <class N>
int64_t Int(const N& dict, const char* key, const std::string& where, int64_t dflt, bool required) {
  auto x = dict.Get(key);
  if (!x || x->IsNone()) {
    if (required) Fail(where + key, "missing");
    return dflt;
  }
  return IntOf(*x, where + key);
}

template <class N>
N List(const N& dict, const char* key, const std::string& where) {
  const N x = Need(dict, key, where);
  if (!x.IsList()) Fail(where + key, std::string("a ") + x.Kind() + ", not a list");
  return x;
}

template <class N>
std::vector<std::vector<int64_t>> Sizes(const N& dict, const char* key, const std::string& where) {
  std::vector<std::vector<int64_t>> out;
  auto x = dict.Get(key);
  if (!x || x->IsNone()) return out;
  if (!x->IsList()) Fail(where + key, "not a list of shapes");
  for (std::size_t i = 0; i < x->Size(); ++i) {
    const N shape = x->At(i);
    if (!shape.IsList()) Fail(where + key + "[" + std::to_string(i) + "]", "not a shape");
    Spend(sizeof(std::vector<int64_t>) + shape.Size() * sizeof(int64_t));
    std::vector<int64_t> dims;
    for (std::size_t d = 0; d < shape.Size(); ++d) {
      const int64_t v = IntOf(shape.At(d), where + key);
      if (v < 0) Fail(where + key, "negative dimension");
      dims.push_back(v);
    }
    out.push_back(std::move(dims));
  }
  return out;
}

template <class N>
std::vector<std::string> Strings(const N& dict, const char* key, const std::string& where) {
  std::vector<std::string> out;
  auto x = dict.Get(key);
  if (!x || x->IsNone()) return out;
  if (!x->IsList()) Fail(where + key, "not a list");
  for (std::size_t i = 0; i < x->Size(); ++i) {
    if (!x->At(i).IsStr()) Fail(where + key, "not a list of strings");
    Spend(sizeof(std::string) + x->At(i).View().size());
    out.push_back(x->At(i).Str());
  }
  return out;
}

// "[0, 1, 2]" (pg_config writes the ranks as text) or a list of ints.
template <class N>
std::vector<int> Ranks(const N& x, const std::string& field) {
  std::vector<int> out;
  auto add = [&](int64_t r) {
    if (r < 0 || r >= kMaxWorldSize) {
      Fail(field,
           "rank " + std::to_string(r) + " outside [0, " + std::to_string(kMaxWorldSize) + ")");
    }
    out.push_back(static_cast<int>(r));
  };
  if (x.IsList()) {
    Spend(x.Size() * sizeof(int));
    for (std::size_t i = 0; i < x.Size(); ++i) add(IntOf(x.At(i), field));
    return out;
  }
  if (!x.IsStr()) Fail(field, "not a list of ranks");
  Spend(x.View().size() * sizeof(int));  // at most one rank per character
  const std::string s = x.Str();
  std::size_t i = 0;
  while (i < s.size()) {
    if (s[i] >= '0' && s[i] <= '9') {
      int64_t r = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        r = std::min<int64_t>(r * 10 + (s[i++] - '0'), int64_t{1} << 50);  // no overflow
      }
      add(r);
    } else if (s[i] == '[' || s[i] == ']' || s[i] == ',' || s[i] == ' ') {
      ++i;
    } else {
      Fail(field, "'" + s.substr(0, 40) + "' is not a list of ranks");
    }
  }
  return out;
}

template <class N>
Entry ReadEntry(const N& e, const std::string& where) {
  if (!e.IsDict()) Fail(where, "not a dict");
  Entry out;
  // In the order PyTorch writes the keys (sorted), so each lookup is one
  // comparison; frames last, as it is read further.
  out.seq = Int(e, "collective_seq_id", where, 0, true);
  out.input_dtypes = Strings(e, "input_dtypes", where);
  out.input_sizes = Sizes(e, "input_sizes", where);
  if (auto p = e.Get("is_p2p"); p && p->IsInt()) out.is_p2p = p->Int() != 0;
  out.output_dtypes = Strings(e, "output_dtypes", where);
  out.output_sizes = Sizes(e, "output_sizes", where);
  out.p2p_seq = Int(e, "p2p_seq_id", where, 0, false);
  out.pg_id = Int(e, "pg_id", where, 0, false);
  const N pg = Need(e, "process_group", where);
  if (!pg.IsList() || pg.Size() != 2 || !pg.At(0).IsStr() || !pg.At(1).IsStr()) {
    Fail(where + "process_group", "not a (name, desc) pair");
  }
  out.pg_name = pg.At(0).Str();
  out.pg_desc = pg.At(1).Str();
  out.profiling_name = Str(e, "profiling_name", where);
  out.record_id = Int(e, "record_id", where, 0, false);
  out.state = Str(e, "state", where);
  Spend(out.pg_name.size() + out.pg_desc.size() + out.profiling_name.size() + out.state.size());
  out.time_created_ns = Int(e, "time_created_ns", where, 0, false);
  out.timeout_ms = Int(e, "timeout_ms", where, 0, false);
  if (auto frames = e.Get("frames"); frames && frames->IsList()) {
    for (std::size_t i = 0; i < frames->Size(); ++i) {
      Spend(sizeof(Frame));  // the work of looking at it
      const N f = frames->At(i);
      auto file = f.IsDict() ? f.Get("filename") : std::nullopt;
      if (!file || !file->IsStr()) Fail(where + "frames[" + std::to_string(i) + "]", "no filename");
      if (!IsUserFile(file->View())) continue;
      const std::string fw = where + "frames[" + std::to_string(i) + "].";
      out.user_frame = Frame{Str(f, "name", fw), file->Str(), Int(f, "line", fw, 0, false)};
      Spend(out.user_frame->name.size() + out.user_frame->file.size());
      break;
    }
  }
  return out;
}

template <class N>
Dump ReadTree(const N& root) {
  if (!root.IsDict()) Fail("top level", std::string("a ") + root.Kind() + ", not a dict");
  Dump d;
  if (!root.Get("entries") || !root.Get("version")) {
    Fail("top level", "no 'entries' or 'version': not a PyTorch Flight Recorder dump");
  }
  const N version = *root.Get("version");
  d.version = version.IsStr() ? version.Str() : std::to_string(IntOf(version, "version"));
  if (auto cfg = root.Get("pg_config"); cfg && cfg->IsDict()) {
    Spend(cfg->Size() * sizeof(Group));
    for (const auto& [name, g] : cfg->Items()) {
      const std::string w = "pg_config['" + name + "'].";
      if (!g.IsDict()) Fail(w, "not a dict");
      Group group;
      group.name = name;
      if (auto desc = g.Get("desc"); desc && desc->IsStr()) group.desc = desc->Str();
      if (auto ranks = g.Get("ranks")) group.ranks = Ranks(*ranks, w + "ranks");
      d.pg_config[name] = std::move(group);
    }
  }
  if (auto status = root.Get("pg_status"); status && status->IsDict()) {
    Spend(status->Size() * 64);
    for (const auto& [id, s] : status->Items()) {
      if (!s.IsDict()) continue;
      d.last_completed[id] =
          Int(s, "last_completed_collective", "pg_status['" + id + "'].", -1, false);
    }
  }
  const N entries = List(root, "entries", "");
  Spend(entries.Size() * sizeof(Entry));  // before the vector is reserved
  d.entries.reserve(entries.Size());
  std::string where;  // "entries[12].", one buffer for all (no allocation per entry)
  for (std::size_t i = 0; i < entries.Size(); ++i) {
    where.assign("entries[").append(std::to_string(i)).append("].");
    d.entries.push_back(ReadEntry(entries.At(i), where));
  }
  return d;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 6 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "nccl_trace_rank_12" -> ("nccl_trace_rank_", 12); files that do not end
// in digits are not dumps (truth.json, README, a .tmp of a dump in progress).
std::optional<std::pair<std::string, int>> SplitName(const std::string& name) {
  // Hidden files and temporary files of a dump being written are not dumps.
  if (name.empty() || name[0] == '.' || name.find(".tmp") != std::string::npos) return std::nullopt;
  std::size_t k = name.size();
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') --k;
  const std::string digits = name.substr(k);
  if (!AllDigits(digits) || k == 0) return std::nullopt;
  if (SuiteDumpRank(name)) return std::nullopt;  // the suite's rank<R>.json
  return std::make_pair(name.substr(0, k), std::stoi(digits));
}

}  // namespace

std::string Entry::Op() const {
  const auto colon = profiling_name.find(':');
  return colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
}

bool IsDefaultGroup(const std::string& name, const std::string& desc) {
  return name == "0" || desc == "default_pg";
}

bool IsUserFile(std::string_view p) {
  const bool torch = p.find("/torch/") != std::string_view::npos || p.rfind("torch/", 0) == 0;
  const bool plumbing = p.empty() || p[0] == '<' ||
                        p.find("/multiprocessing/") != std::string_view::npos ||
                        p.find("/threading.py") != std::string_view::npos ||
                        p.find("/runpy.py") != std::string_view::npos;
  return !torch && !plumbing;
}

Dump ParseDump(std::string_view bytes, const std::string& path, int rank) {
  t_read_limit = kReadFactor * bytes.size() + (std::size_t{1} << 20);
  t_read_budget = t_read_limit;
  try {
    Dump d;
    if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
      const pickle::PickleDoc doc(bytes, 8'000'000, kDecodeFactor * bytes.size() + (1 << 20));
      d = ReadTree(PNode{&doc.Root()});
      d.format = "pickle";
    } else {
      const std::size_t first = bytes.find_first_not_of(" \t\r\n");
      if (first == std::string_view::npos || bytes[first] != '{') {
        throw DumpError("neither a pickle nor JSON: not a PyTorch Flight Recorder dump");
      }
      CheckJsonDepth(bytes, 64);
      Json j;
      try {
        j = results::ParseJson(std::string(bytes));
      } catch (const std::exception& e) {
        throw DumpError(std::string("not JSON (truncated?): ") + e.what());
      }
      d = ReadTree(JNode{&j});
      d.format = "json";
    }
    d.rank = rank;
    d.path = path;
    return d;
  } catch (const pickle::PickleError& e) {
    throw DumpError(path + ": pickle " + e.what() +
                    "; not a (complete) PyTorch Flight Recorder dump");
  } catch (const DumpError& e) {
    throw DumpError(path + ": " + e.what());
  } catch (const std::bad_alloc&) {
    // Within the bounds above this should not happen; when it does (several
    // large files at once on a small machine), the file is named.
    throw DumpError(path + ": out of memory while reading its " + std::to_string(bytes.size()) +
                    " bytes");
  }
}

std::string FirstFrDump(const std::string& dir) {
  std::error_code ec;
  std::string first;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    if (SplitName(name) && (first.empty() || name < first)) first = name;
  }
  return first;
}

DirDumps ReadDir(const std::string& dir, int world_size) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) throw DumpError(dir + ": cannot list: " + ec.message());
  std::map<std::string, std::vector<std::pair<int, std::string>>> by_prefix;
  for (const auto& f : it) {
    const std::string name = f.path().filename().string();
    if (auto split = SplitName(name))
      by_prefix[split->first].push_back({split->second, f.path().string()});
  }
  if (by_prefix.empty()) {
    throw DumpError(dir +
                    ": no dumps in it (PyTorch's <prefix><rank> files, e.g. nccl_trace_rank_0, "
                    "or the suite's rank<R>.json)");
  }
  if (by_prefix.size() > 1) {
    std::string names;
    for (const auto& [p, files] : by_prefix)
      names += (names.empty() ? "" : ", ") + p + "<rank> (" + std::to_string(files.size()) + ")";
    throw DumpError(dir + ": two sets of dumps in one folder: " + names +
                    "; give the folder of one job");
  }
  DirDumps out;
  out.prefix = by_prefix.begin()->first;
  auto& files = by_prefix.begin()->second;
  std::sort(files.begin(), files.end());
  RefuseTwoFilesForOneRank(files);
  int world = std::max(world_size, 0);
  for (const auto& [rank, path] : files) {
    if (rank >= kMaxWorldSize) {
      throw DumpError(path + ": rank " + std::to_string(rank) + " beyond " +
                      std::to_string(kMaxWorldSize) + " ranks");
    }
    world = std::max(world, rank + 1);
  }
  // The files are independent: read them on every core (64 ranks x 2000
  // entries in well under a second, fr_scale_test). The first bad file in
  // rank order is the one reported.
  std::vector<Dump> dumps(files.size());
  std::vector<std::string> errors(files.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
      try {
        dumps[i] = ParseDump(ReadDumpBytes(files[i].second), files[i].second, files[i].first);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  const std::size_t n_threads =
      std::min<std::size_t>({files.size(), std::max(1u, std::thread::hardware_concurrency()), 8});
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < n_threads; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (const std::string& e : errors) {
    if (!e.empty()) throw DumpError(e);
  }
  // Named groups in pg_config: NCCL's (legacy ProcessGroupNCCL and the
  // FlightRecorderHook of 2.15's default "nccl2") are keyed by the group's
  // name, with its global ranks, and a rank lists only the groups it
  // belongs to. PyTorch 2.15's gloo keeps one anonymous entry ('') holding
  // the group-local ranks 0..n-1 of the last group that rank joined:
  // [0, 1] on the members of new_group([0, 1]) beside [0, 1, 2] on rank 2.
  // It bounds the world (local ranks are below it) but says nothing about
  // membership, so it is never compared across ranks.
  std::string world_why = "the highest rank with a dump";
  const Dump* default_from = nullptr;  // a dump whose pg_config names the default group
  int default_world = 0;
  bool anonymous = false;
  for (const Dump& d : dumps) {
    for (const auto& [name, g] : d.pg_config) {
      anonymous |= name.empty();
      for (int r : g.ranks) {
        if (r + 1 > world) {
          world = r + 1;
          world_why = d.path + "'s pg_config ('" + name + "')";
        }
      }
      if (default_from == nullptr && !name.empty() && IsDefaultGroup(name, g.desc) &&
          !g.ranks.empty()) {
        default_from = &d;
        default_world = *std::max_element(g.ranks.begin(), g.ranks.end()) + 1;
      }
    }
  }
  if (world_size > 0 && world > world_size) {
    throw DumpError(dir + ": --world_size " + std::to_string(world_size) + " but " + world_why +
                    " names rank " + std::to_string(world - 1));
  }
  // Two jobs in one folder. What decides, and only this:
  //  - the format version: one job writes one;
  //  - a named group's members: the same on every rank that lists it;
  //  - the default group's members, where pg_config names it: they are the
  //    world, so a dump of a rank beyond them comes from another job;
  //  - a group's description (process_group's second half): one per name;
  //  - timestamps: a collective that two ranks both got past (each has the
  //    next one of its group) was entered by both within its timeout,
  //    since the first to arrive waits at most that long.
  // Not evidence: gloo's anonymous pg_config entry (above), pg_id (each
  // process numbers the groups it joined), pg_status (keyed by pg_id).
  std::map<std::string, const Dump*> listed_by;  // named group -> the first dump listing it
  for (const Dump& d : dumps) {
    if (d.version != dumps.front().version) {
      throw DumpError(d.path + ": format version " + d.version + " but " + dumps.front().path +
                      " has " + dumps.front().version +
                      ": dumps of different jobs (or PyTorch versions) in one folder");
    }
    for (const auto& [name, g] : d.pg_config) {
      if (name.empty()) continue;
      auto [it, first] = listed_by.try_emplace(name, &d);
      if (!first && it->second->pg_config.at(name).ranks != g.ranks) {
        throw DumpError(d.path + ": pg_config['" + name + "'] ranks differ from " +
                        it->second->path + "'s: dumps of different jobs in one folder");
      }
    }
  }
  if (default_from != nullptr) {
    if (world_size > default_world) {
      throw DumpError(dir + ": --world_size " + std::to_string(world_size) + " but " +
                      default_from->path + "'s pg_config names a default group of " +
                      std::to_string(default_world) + " ranks");
    }
    for (const Dump& d : dumps) {
      if (d.rank >= default_world) {
        throw DumpError(d.path + ": rank " + std::to_string(d.rank) + ", but " +
                        default_from->path + "'s pg_config names a default group of " +
                        std::to_string(default_world) +
                        " ranks: dumps of different jobs in one folder");
      }
    }
    if (world > default_world) {
      throw DumpError(dir + ": " + world_why + " names rank " + std::to_string(world - 1) +
                      ", but " + default_from->path + "'s pg_config names a default group of " +
                      std::to_string(default_world) +
                      " ranks: dumps of different jobs in one folder");
    }
    world = default_world;
    world_why = default_from->path + "'s pg_config (the default group)";
  }
  if (world_size > 0) world_why = "--world_size";
  out.notes.push_back("world size " + std::to_string(world) + " (from " + world_why + ")");
  if (anonymous) {
    out.notes.push_back(
        "pg_config names no group (PyTorch's gloo): a subgroup's members are the ranks that "
        "recorded a collective in it");
  }
  std::map<std::string, std::pair<std::string, const Dump*>> desc_of;  // group name -> desc, where
  for (const Dump& d : dumps) {
    const Entry* prev = nullptr;  // entries run in groups: look each name up once per run
    for (const Entry& e : d.entries) {
      if (prev != nullptr && prev->pg_name == e.pg_name && prev->pg_desc == e.pg_desc) continue;
      prev = &e;
      auto [it, inserted] = desc_of.try_emplace(e.pg_name, e.pg_desc, &d);
      if (!inserted && it->second.first != e.pg_desc) {
        throw DumpError(d.path + ": process group '" + e.pg_name + "' is described as '" +
                        e.pg_desc + "', but as '" + it->second.first + "' in " +
                        it->second.second->path + ": dumps of different jobs in one folder");
      }
    }
  }
  struct Seen {
    int64_t t, timeout_ms;
    const Dump* dump;
  };
  // Per process group, per collective: the first rank seen past it.
  std::map<std::string, std::unordered_map<int64_t, Seen>> passed;
  for (const Dump& d : dumps) {
    std::map<std::string, int64_t> newest;  // per group, this rank's highest seq
    for (const Entry& e : d.entries) {
      if (!e.is_p2p && e.seq > 0) newest[e.pg_name] = std::max(newest[e.pg_name], e.seq);
    }
    for (const Entry& e : d.entries) {
      if (e.is_p2p || e.seq <= 0 || e.time_created_ns <= 0 || e.seq >= newest[e.pg_name]) continue;
      auto [at, inserted] =
          passed[e.pg_name].try_emplace(e.seq, Seen{e.time_created_ns, e.timeout_ms, &d});
      if (inserted) continue;
      // Saturating: a timeout_ms of INT64_MAX (no timeout) wrapped to a
      // negative bound, and every pair of ranks looked like two jobs.
      const int64_t longest = std::max(e.timeout_ms, at->second.timeout_ms);
      const int64_t bound_ms =
          longest > std::numeric_limits<int64_t>::max() - 5000 ? std::numeric_limits<int64_t>::max()
                                                               : longest + 5000;
      const int64_t apart_ms = std::llabs(at->second.t - e.time_created_ns) / 1'000'000;
      if (apart_ms > bound_ms) {
        throw DumpError(
            d.path + ": collective #" + std::to_string(e.seq) + " of process group " + e.pg_name +
            " was entered " + std::to_string(apart_ms / 1000) + " s apart from " +
            at->second.dump->path + "'s, and both went past it (timeout " +
            std::to_string(bound_ms / 1000 - 5) + " s): dumps of two different jobs in one folder");
      }
    }
  }
  out.by_rank.resize(static_cast<std::size_t>(world));
  for (Dump& d : dumps) {
    const int r = d.rank;
    out.by_rank[static_cast<std::size_t>(r)] = std::move(d);
  }
  return out;
}

}  // namespace ddp::trace::fr

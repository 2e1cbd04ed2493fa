#include "core/trace/dump_json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>

namespace ddp::trace {
namespace {

using results::Json;

constexpr char kFormat[] = "ddp-pitfalls flight recorder";
constexpr int kVersion = 1;

}  // namespace

Json ToJson(const TraceEntry& e) {
  Json j;
  j["seq"] = static_cast<long long>(e.seq);
  j["op"] = comm::Name(e.op);
  if (e.op != comm::OpKind::kBarrier) {
    j["dtype"] = comm::Name(e.dtype);
    j["count"] = static_cast<unsigned long>(e.count);
  }
  if (e.op == comm::OpKind::kAllgatherv) {
    Json counts = Json::array();
    for (uint64_t c : e.counts) counts.push_back(static_cast<unsigned long>(c));
    j["counts"] = counts;
  }
  if (e.root >= 0) j["root"] = e.root;
  if (e.reduce >= 0) j["reduce"] = comm::Name(static_cast<comm::ReduceOp>(e.reduce));
  j["state"] = Name(e.state);
  j["enter_unix_s"] = e.enter_unix_s;
  if (e.exit_unix_s) j["exit_unix_s"] = *e.exit_unix_s;
  j["file"] = e.site.file;
  j["line"] = e.site.line;
  j["function"] = e.site.function;
  return j;
}

namespace {

Json CommJson(const CommTrace& c) {
  Json j;
  j["name"] = c.name;
  j["backend"] = c.backend;
  j["rank"] = c.rank;
  j["world_size"] = c.world_size;
  j["deadline_s"] = c.deadline_s;
  j["checked"] = c.checked;
  j["state"] = c.state;
  j["next_seq"] = static_cast<long long>(c.next_seq);
  j["capacity"] = static_cast<long long>(c.capacity);
  Json entries = Json::array();
  for (const TraceEntry& e : c.entries) entries.push_back(ToJson(e));
  j["entries"] = entries;
  return j;
}

// Reads fields of one JSON object, naming the path of a missing or
// ill-typed one: "rank1.json: comms[0].entries[3].op: missing".
class Reader {
 public:
  Reader(const Json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j.is_object()) Fail("", "not an object");
  }
  const Json& Get(const std::string& key) const {
    const Json* v = Find(j_, key);
    if (v == nullptr) Fail(key, "missing");
    return *v;
  }
  bool Has(const std::string& key) const { return Find(j_, key) != nullptr; }
  std::string String(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_string()) Fail(key, "not a string");
    return v.get<std::string>();
  }
  double Number(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_number()) Fail(key, "not a number");
    return v.get<double>();
  }
  int64_t Int(const std::string& key, int64_t min, int64_t max = kMaxInt) const {
    const double d = Number(key);
    if (d != std::floor(d) || d < static_cast<double>(min) || d > static_cast<double>(max)) {
      Fail(key, "not an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return static_cast<int64_t>(d);
  }
  // Sizes that become allocations or loop bounds are checked against these
  // before use (issue 35: world_size 2^31-1 in one dump was a bad_alloc).
  static constexpr int64_t kMaxInt = 9'000'000'000'000'000;
  static constexpr int64_t kMaxInt32 = 2'147'483'647;
  bool Bool(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_boolean()) Fail(key, "not a boolean");
    return v.get<bool>();
  }
  const Json& Array(const std::string& key) const {
    const Json& v = Get(key);
    if (!v.is_array()) Fail(key, "not an array");
    return v;
  }
  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void Fail(const std::string& key, const std::string& what) const {
    throw DumpError(Path(key) + ": " + what);
  }

 private:
  const Json& j_;
  std::string path_;
};

template <typename T>
T Parsed(const Reader& r, const std::string& key, std::optional<T> (*parse)(std::string_view)) {
  const std::string s = r.String(key);
  const auto v = parse(s);
  if (!v) r.Fail(key, "unknown value '" + s + "'");
  return *v;
}

TraceEntry EntryFromJson(const Json& j, const std::string& path) {
  const Reader r(j, path);
  TraceEntry e;
  e.seq = r.Int("seq", 0);
  e.op = Parsed<comm::OpKind>(r, "op", &comm::ParseOpKind);
  if (e.op != comm::OpKind::kBarrier) {
    e.dtype = Parsed<comm::DType>(r, "dtype", &comm::ParseDType);
    e.count = static_cast<uint64_t>(r.Int("count", 0));
  }
  if (e.op == comm::OpKind::kAllgatherv) {
    const auto& counts = r.Array("counts");
    for (std::size_t i = 0; i < counts.size(); ++i) {
      if (!counts[i].is_number() || counts[i].get<double>() < 0) {
        r.Fail("counts[" + std::to_string(i) + "]", "not a count");
      }
      e.counts.push_back(static_cast<uint64_t>(counts[i].get<double>()));
    }
  }
  if (r.Has("root")) e.root = static_cast<int>(r.Int("root", 0, kMaxWorldSize - 1));
  if (r.Has("reduce")) {
    e.reduce = static_cast<int>(Parsed<comm::ReduceOp>(r, "reduce", &comm::ParseReduceOp));
  }
  e.state = Parsed<State>(r, "state", &ParseState);
  e.enter_unix_s = r.Number("enter_unix_s");
  if (r.Has("exit_unix_s")) e.exit_unix_s = r.Number("exit_unix_s");
  e.site.file = r.String("file");
  e.site.line = static_cast<int>(r.Int("line", 0, Reader::kMaxInt32));
  e.site.function = r.String("function");
  return e;
}

CommTrace CommFromJson(const Json& j, const std::string& path) {
  const Reader r(j, path);
  CommTrace c;
  c.name = r.String("name");
  c.backend = r.String("backend");
  c.rank = static_cast<int>(r.Int("rank", 0, kMaxWorldSize - 1));
  c.world_size = static_cast<int>(r.Int("world_size", 1, kMaxWorldSize));
  if (c.rank >= c.world_size) r.Fail("rank", "not below world_size");
  c.deadline_s = r.Number("deadline_s");
  c.checked = r.Bool("checked");
  c.state = r.String("state");
  c.next_seq = r.Int("next_seq", 0);
  c.capacity = r.Int("capacity", 0);
  const auto& entries = r.Array("entries");
  if (c.capacity > 0 && entries.size() > static_cast<std::size_t>(c.capacity)) {
    r.Fail("entries", "more than capacity (" + std::to_string(c.capacity) + ")");
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    c.entries.push_back(EntryFromJson(entries[i], r.Path("entries[" + std::to_string(i) + "]")));
    if (i > 0 && c.entries[i].seq != c.entries[i - 1].seq + 1) {
      r.Fail("entries[" + std::to_string(i) + "].seq", "not consecutive");
    }
    if (c.entries[i].counts.size() > static_cast<std::size_t>(c.world_size)) {
      r.Fail("entries[" + std::to_string(i) + "].counts", "more counts than world_size");
    }
  }
  // The analyzer walks sequence numbers between the entries: the newest
  // entry must be the last collective entered, or next_seq is a lie.
  if (!c.entries.empty() && c.entries.back().seq != c.next_seq - 1) {
    r.Fail("next_seq",
           "not one past the newest entry's seq (" + std::to_string(c.entries.back().seq) + ")");
  }
  return c;
}

}  // namespace

Json ToJson(const RankDump& d) {
  Json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["rank"] = d.rank;
  j["world_size"] = d.world_size;
  j["host"] = d.host;
  j["pid"] = static_cast<long long>(d.pid);
  j["run_id"] = d.run_id;
  j["reason"] = d.reason;
  j["request"] = d.request;
  j["dump_unix_s"] = d.dump_unix_s;
  Json comms = Json::array();
  for (const CommTrace& c : d.comms) comms.push_back(CommJson(c));
  j["comms"] = comms;
  return j;
}

RankDump DumpFromJson(const Json& j, const std::string& where) {
  try {
    const Reader r(j, "");
    if (r.String("format") != kFormat) r.Fail("format", "not a flight recorder dump");
    if (r.Int("version", 0) != kVersion) {
      r.Fail("version", "unsupported (this build reads version " + std::to_string(kVersion) + ")");
    }
    RankDump d;
    d.rank = static_cast<int>(r.Int("rank", 0, kMaxWorldSize - 1));
    d.world_size = static_cast<int>(r.Int("world_size", 1, kMaxWorldSize));
    if (d.rank >= d.world_size) r.Fail("rank", "not below world_size");
    d.host = r.String("host");
    d.pid = r.Int("pid", 0);
    d.run_id = r.String("run_id");
    d.reason = r.String("reason");
    d.request = r.String("request");
    d.dump_unix_s = r.Number("dump_unix_s");
    const auto& comms = r.Array("comms");
    for (std::size_t i = 0; i < comms.size(); ++i) {
      d.comms.push_back(CommFromJson(comms[i], "comms[" + std::to_string(i) + "]"));
    }
    return d;
  } catch (const DumpError& e) {
    throw DumpError(where + ": " + e.what());
  }
}

void CheckJsonDepth(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        throw DumpError("JSON nested deeper than " + std::to_string(max_depth) + " at byte " +
                        std::to_string(i));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

RankDump ParseDump(const std::string& text, const std::string& where) {
  try {
    CheckJsonDepth(text, 64);
  } catch (const DumpError& e) {
    throw DumpError(where + ": " + e.what());
  }
  Json j;
  try {
    j = results::ParseJson(text);
  } catch (const std::exception& e) {
    throw DumpError(where + ": not JSON: " + e.what());
  }
  return DumpFromJson(j, where);
}

std::string DumpPath(const std::string& dir, int rank) {
  return dir + "/rank" + std::to_string(rank) + ".json";
}

void WriteFileAtomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw DumpError("cannot write " + tmp + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      throw DumpError("cannot write " + tmp + ": " + err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw DumpError("cannot write " + path + ": " + err);
  }
}

std::string WriteDumpFile(const std::string& dir, const RankDump& dump) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw DumpError("cannot create " + dir + ": " + ec.message());
  const std::string path = DumpPath(dir, dump.rank);
  WriteFileAtomically(path, Dump(ToJson(dump), 1) + "\n");
  return path;
}

std::string ReadDumpBytes(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is
  // checked on the open descriptor, so a swapped file cannot slip through.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw DumpError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = std::string("cannot stat: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file (a device, FIFO, socket or folder); dumps are plain files";
  } else if (static_cast<std::size_t>(st.st_size) > kMaxDumpBytes) {
    why = "larger than " + std::to_string(kMaxDumpBytes >> 20) + " MiB (" +
          std::to_string(st.st_size) + " bytes); not a flight recorder dump?";
  }
  std::string bytes;
  if (why.empty()) {
    // Read at most one byte past the cap: a file that grows meanwhile is refused too.
    bytes.resize(static_cast<std::size_t>(st.st_size) + 1);
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        why = std::string("read failed: ") + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
      if (done > kMaxDumpBytes) {
        why = "larger than " + std::to_string(kMaxDumpBytes >> 20) + " MiB";
        break;
      }
      if (done == bytes.size()) bytes.resize(std::min(bytes.size() * 2, kMaxDumpBytes + 1));
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!why.empty()) throw DumpError(path + ": " + why);
  return bytes;
}

RankDump ReadDumpFile(const std::string& path) { return ParseDump(ReadDumpBytes(path), path); }

std::optional<int> SuiteDumpRank(std::string_view name) {
  if (name.size() < 10 || !name.starts_with("rank") || !name.ends_with(".json")) return std::nullopt;
  const std::string_view digits = name.substr(4, name.size() - 9);
  if (digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::stoi(std::string(digits));
}

void RefuseTwoFilesForOneRank(const std::vector<std::pair<int, std::string>>& sorted) {
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].first == sorted[i - 1].first) {
      throw DumpError(sorted[i - 1].second + " and " + sorted[i].second + ": both are rank " +
                      std::to_string(sorted[i].first) + "; keep one dump per rank");
    }
  }
}

std::vector<std::optional<RankDump>> ReadDumpDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) throw DumpError(dir + ": cannot list: " + ec.message());
  std::vector<std::pair<int, std::string>> files;
  for (const auto& f : it) {
    if (const auto rank = SuiteDumpRank(f.path().filename().string())) {
      files.emplace_back(*rank, f.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  RefuseTwoFilesForOneRank(files);
  std::vector<std::pair<int, RankDump>> found;
  for (const auto& [rank, path] : files) {
    RankDump d = ReadDumpFile(path);
    if (d.rank != rank) {
      throw DumpError(path + ": rank: " + std::to_string(d.rank) +
                      ", but the file is named for rank " + std::to_string(rank));
    }
    found.emplace_back(rank, std::move(d));
  }
  if (found.empty()) throw DumpError(dir + ": no rank<R>.json flight recorder dumps in it");
  const int world = found.front().second.world_size;
  std::vector<std::optional<RankDump>> out(static_cast<std::size_t>(world));
  for (auto& [rank, d] : found) {
    if (d.world_size != world) {
      throw DumpError(DumpPath(dir, rank) + ": world_size " + std::to_string(d.world_size) +
                      " differs from " + DumpPath(dir, found.front().first) + " (" +
                      std::to_string(world) + "): dumps of different runs in one folder?");
    }
    out[static_cast<std::size_t>(rank)] = std::move(d);
  }
  return out;
}

}  // namespace ddp::trace

#include "core/comm/comm.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/comm/options.h"
#include "core/trace/exchange.h"
#include "core/trace/watchdog.h"

namespace ddp::comm {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

std::string Seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

// DDP_PITFALLS_COUNT_FILE (options.h): one line per communicator, written
// with one append so that the lines of concurrent ranks never interleave.
void AppendCount(const std::string& backend, int world_size, int rank, const std::string& where,
                 int64_t collectives) {
  const char* path = std::getenv(kEnvCountFile);
  if (path == nullptr || *path == '\0') return;
  char line[1024];
  const int n = std::snprintf(line, sizeof line,
                              "backend=%s world_size=%d rank=%d collectives=%lld %s\n",
                              backend.c_str(), world_size, rank,
                              static_cast<long long>(collectives), where.c_str());
  if (n <= 0) return;
  const std::size_t len = std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1);
  line[len - 1] = '\n';  // a store name cut short still ends its line
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  // A census line lost is no reason to fail a run: the result is ignored.
  if (::write(fd, line, len) < 0) {
  }
  ::close(fd);
}

// Gloo tags are 32 bits: even for the call, odd for its fingerprint exchange.
uint32_t CallTag(int64_t seq) { return static_cast<uint32_t>(2 * seq); }
uint32_t CheckTag(int64_t seq) { return static_cast<uint32_t>(2 * seq + 1); }

}  // namespace

Comm::Comm(CommSetup setup)
    : rank_(setup.rank),
      world_size_(setup.world_size),
      backend_(std::move(setup.backend)),
      timeout_(setup.timeout),
      startup_timeout_(setup.startup_timeout),
      first_deadline_(setup.lazy_connect ? std::max(setup.timeout, setup.startup_timeout)
                                         : setup.timeout),
      call_deadline_(first_deadline_),
      checked_(setup.checked),
      store_(std::move(setup.store)),
      run_id_(std::move(setup.run_id)),
      trace_dir_(std::move(setup.trace_dir)),
      host_(std::move(setup.host)) {
  if (setup.trace_entries > 0) {
    recorder_ = std::make_shared<trace::FlightRecorder>(
        trace::FlightRecorder::Identity{setup.name, backend_, rank_, world_size_, timeout_,
                                        checked_, first_deadline_},
        setup.trace_entries);
  }
}

Comm::~Comm() {
  // The store names the world (a fresh folder per spawned world) and, with
  // its prefix, the communicator.
  AppendCount(backend_, world_size_, rank_, store_ ? store_->Describe() : "", seq_);
  Finish();
  try {
    StopWatchdog();
  } catch (...) {
    // A destructor must not throw; the watchdog thread ends with the process.
  }
}

void Comm::StartWatchdog() {
  if (!recorder_ || watchdog_id_ >= 0) return;
  trace::Watchdog::Registration r;
  r.recorder = recorder_;
  if (store_) {
    r.channel = std::make_shared<trace::DumpChannel>(store_, rank_, world_size_);
    try {
      r.channel->PublishHost(host_);
    } catch (const std::exception&) {
      // Only the reports' host names are lost; the next store operation
      // that matters will say what is wrong with the store.
    }
  }
  r.trace_dir = trace_dir_;
  r.run_id = run_id_;
  auto& watchdog = trace::Watchdog::Get();
  watchdog_id_ = watchdog.Register(std::move(r));
  if (auto hook = WatchdogAbortHook()) watchdog.SetAbortHook(watchdog_id_, std::move(hook));
}

void Comm::StopWatchdog() {
  if (watchdog_id_ < 0) return;
  auto& watchdog = trace::Watchdog::Get();
  if (!broken_) watchdog.PublishLast(watchdog_id_);
  watchdog.Unregister(watchdog_id_);
  watchdog_id_ = -1;
}

void Comm::Finish() {
  if (finished_ || broken_) return;
  finished_ = true;
  if (recorder_) recorder_->MarkFinished();
}

void Comm::ThrowIfBroken(OpKind op) const {
  if (broken_) {
    throw CommError(std::string(Name(op)) + " on a broken communicator (rank " +
                    std::to_string(rank_) + "): " + broken_reason_);
  }
  if (finished_) {
    throw CommError(std::string(Name(op)) + " after Finish() on rank " + std::to_string(rank_));
  }
}

template <typename EngineCall>
void Comm::Run(Fingerprint fp, std::span<const std::size_t> counts, const Site& site,
               EngineCall&& call) {
  ThrowIfBroken(fp.op);
  fp.seq = seq_++;
  call_deadline_ = fp.seq == 0 ? first_deadline_ : timeout_;
  const auto start = Clock::now();
  if (recorder_) recorder_->Enter(fp, counts, site, start);
  if (checked_) {
    std::vector<Fingerprint> all;
    try {
      all = EngineExchangeFingerprints(fp, CheckTag(fp.seq));
    } catch (const EngineFailure& f) {
      Fail(fp, f, Since(start), /*in_check=*/true);
    }
    if (auto mismatch = FindMismatch(all, counts)) {
      broken_ = true;
      broken_reason_ = "checked-mode mismatch at collective #" + std::to_string(fp.seq);
      if (recorder_) {
        recorder_->Exit(fp.seq, trace::State::kCheckFailed, Clock::now());
        recorder_->MarkBroken();
      }
      throw CheckError(*mismatch);
    }
  }
  try {
    call(CallTag(fp.seq));
  } catch (const EngineFailure& f) {
    Fail(fp, f, Since(start), /*in_check=*/false);
  }
  if (recorder_) recorder_->Exit(fp.seq, trace::State::kCompleted, Clock::now());
}

void Comm::Fail(const Fingerprint& fp, const EngineFailure& failure,
                std::chrono::milliseconds elapsed, bool in_check) {
  broken_ = true;
  const bool timeout = failure.kind == EngineFailure::Kind::kTimeout;
  FailureContext ctx;
  ctx.rank = rank_;
  ctx.world_size = world_size_;
  ctx.backend = backend_;
  ctx.op = fp.op;
  ctx.seq = fp.seq;
  ctx.elapsed = elapsed;
  ctx.deadline = call_deadline_;
  ctx.engine_message = failure.what();
  if (recorder_) {
    recorder_->Exit(fp.seq, timeout ? trace::State::kTimedOut : trace::State::kPeerFailed,
                    Clock::now());
    recorder_->MarkBroken();
  }
  if (watchdog_id_ >= 0) {
    const auto report = trace::Watchdog::Get().OnFailure(
        watchdog_id_, std::string(timeout ? "deadline" : "peer failure") + " in " + Name(fp.op) +
                          " #" + std::to_string(fp.seq),
        kDumpWait);
    ctx.report = report.text;
    ctx.verdict = report.verdict;
    ctx.mismatch_class = report.klass;
    ctx.culprits = report.culprits;
    ctx.dump_path = report.dump_path;
  } else {
    ctx.report = "desync report unavailable: the flight recorder is off (" +
                 std::string(recorder_ ? "no watchdog" : "DDP_PITFALLS_TRACE_ENTRIES=0") + ")";
  }
  std::ostringstream msg;
  msg << (timeout ? "deadline exceeded" : "peer failure") << " on rank " << rank_ << "/"
      << world_size_ << ": " << fp.ToString() << (in_check ? " (checked-mode fingerprint exchange)" : "")
      << " on " << backend_ << " after " << Seconds(elapsed)
      << (fp.seq == 0 && first_deadline_ != timeout_ ? " (first collective: start-up bound "
                                                      : " (deadline ")
      << Seconds(call_deadline_) << ")\n"
      << "  engine: " << failure.what() << "\n"
      << ctx.report;
  broken_reason_ = msg.str().substr(0, msg.str().find('\n'));
  if (timeout) throw DeadlineError(msg.str(), std::move(ctx));
  throw PeerError(msg.str(), std::move(ctx));
}

void Comm::Allgather(const void* send, void* recv, std::size_t count, DType dtype, Site site) {
  Fingerprint fp;
  fp.op = OpKind::kAllgather;
  fp.dtype = dtype;
  fp.count = count;
  Run(fp, {}, site, [&](uint32_t tag) { EngineAllgather(send, recv, count, dtype, tag); });
}

void Comm::Allgatherv(const void* send, std::size_t count, void* recv,
                      std::span<const std::size_t> counts, DType dtype, Site site) {
  if (counts.size() != static_cast<std::size_t>(world_size_)) {
    throw std::invalid_argument("Allgatherv: counts has " + std::to_string(counts.size()) +
                                " entries, world size is " + std::to_string(world_size_));
  }
  Fingerprint fp;
  fp.op = OpKind::kAllgatherv;
  fp.dtype = dtype;
  fp.count = count;
  fp.counts_hash = HashCounts(counts);
  fp.engine_variant = AllgathervEngineVariant();
  Run(fp, counts, site,
      [&](uint32_t tag) { EngineAllgatherv(send, count, recv, counts, dtype, tag); });
}

void Comm::Allreduce(void* data, std::size_t count, DType dtype, ReduceOp op, Site site) {
  Fingerprint fp;
  fp.op = OpKind::kAllreduce;
  fp.dtype = dtype;
  fp.count = count;
  fp.reduce = static_cast<int64_t>(op);
  Run(fp, {}, site, [&](uint32_t tag) { EngineAllreduce(data, count, dtype, op, tag); });
}

void Comm::Broadcast(void* data, std::size_t count, DType dtype, int root, Site site) {
  if (root < 0 || root >= world_size_) {
    throw std::invalid_argument("Broadcast: root " + std::to_string(root) + " not in [0, " +
                                std::to_string(world_size_) + ")");
  }
  Fingerprint fp;
  fp.op = OpKind::kBroadcast;
  fp.dtype = dtype;
  fp.count = count;
  fp.root = root;
  Run(fp, {}, site, [&](uint32_t tag) { EngineBroadcast(data, count, dtype, root, tag); });
}

void Comm::ReduceScatter(const void* send, void* recv, std::size_t recv_count, DType dtype,
                         Site site) {
  Fingerprint fp;
  fp.op = OpKind::kReduceScatter;
  fp.dtype = dtype;
  fp.count = recv_count;
  fp.reduce = static_cast<int64_t>(ReduceOp::kSum);
  Run(fp, {}, site, [&](uint32_t tag) { EngineReduceScatter(send, recv, recv_count, dtype, tag); });
}

void Comm::Barrier(Site site) {
  Fingerprint fp;
  fp.op = OpKind::kBarrier;
  Run(fp, {}, site, [&](uint32_t tag) { EngineBarrier(tag); });
}

}  // namespace ddp::comm

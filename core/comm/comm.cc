#include "core/comm/comm.h"

#include <cstdio>
#include <sstream>

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

// Gloo tags are 32 bits: even for the call, odd for its fingerprint exchange.
uint32_t CallTag(int64_t seq) { return static_cast<uint32_t>(2 * seq); }
uint32_t CheckTag(int64_t seq) { return static_cast<uint32_t>(2 * seq + 1); }

}  // namespace

Comm::Comm(CommSetup setup)
    : rank_(setup.rank),
      world_size_(setup.world_size),
      backend_(std::move(setup.backend)),
      timeout_(setup.timeout),
      checked_(setup.checked),
      progress_(std::move(setup.store), setup.rank, setup.world_size, setup.record_progress) {
  progress_.Record({ProgressRecord::State::kReady, -1, OpKind::kBarrier});
}

Comm::~Comm() {
  try {
    Finish();
  } catch (...) {
    // A destructor must not throw; a lost "finished" record only makes a
    // peer's report less precise.
  }
}

void Comm::Finish() {
  if (finished_ || broken_) return;
  finished_ = true;
  progress_.Record({ProgressRecord::State::kFinished, last_seq_, last_op_});
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
void Comm::Run(Fingerprint fp, std::span<const std::size_t> counts, EngineCall&& call) {
  ThrowIfBroken(fp.op);
  fp.seq = seq_++;
  progress_.Record({ProgressRecord::State::kEntered, fp.seq, fp.op});
  const auto start = Clock::now();
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
      progress_.Record({ProgressRecord::State::kFailed, fp.seq, fp.op});
      throw CheckError(*mismatch);
    }
  }
  try {
    call(CallTag(fp.seq));
  } catch (const EngineFailure& f) {
    Fail(fp, f, Since(start), /*in_check=*/false);
  }
  last_seq_ = fp.seq;
  last_op_ = fp.op;
}

void Comm::Fail(const Fingerprint& fp, const EngineFailure& failure,
                std::chrono::milliseconds elapsed, bool in_check) {
  broken_ = true;
  progress_.Record({ProgressRecord::State::kFailed, fp.seq, fp.op});
  FailureContext ctx;
  ctx.rank = rank_;
  ctx.world_size = world_size_;
  ctx.backend = backend_;
  ctx.op = fp.op;
  ctx.seq = fp.seq;
  ctx.elapsed = elapsed;
  ctx.deadline = timeout_;
  ctx.engine_message = failure.what();
  ctx.report = FormatDesyncReport(rank_, fp.seq, fp.op, progress_.ReadAll(), progress_.enabled());
  const bool timeout = failure.kind == EngineFailure::Kind::kTimeout;
  std::ostringstream msg;
  msg << (timeout ? "deadline exceeded" : "peer failure") << " on rank " << rank_ << "/"
      << world_size_ << ": " << fp.ToString() << (in_check ? " (checked-mode fingerprint exchange)" : "")
      << " on " << backend_ << " after " << Seconds(elapsed) << " (deadline "
      << Seconds(timeout_) << ")\n"
      << "  engine: " << failure.what() << "\n"
      << ctx.report;
  broken_reason_ = msg.str().substr(0, msg.str().find('\n'));
  if (timeout) throw DeadlineError(msg.str(), std::move(ctx));
  throw PeerError(msg.str(), std::move(ctx));
}

void Comm::Allgather(const void* send, void* recv, std::size_t count, DType dtype) {
  Fingerprint fp;
  fp.op = OpKind::kAllgather;
  fp.dtype = dtype;
  fp.count = count;
  Run(fp, {}, [&](uint32_t tag) { EngineAllgather(send, recv, count, dtype, tag); });
}

void Comm::Allgatherv(const void* send, std::size_t count, void* recv,
                      std::span<const std::size_t> counts, DType dtype) {
  if (counts.size() != static_cast<std::size_t>(world_size_)) {
    throw std::invalid_argument("Allgatherv: counts has " + std::to_string(counts.size()) +
                                " entries, world size is " + std::to_string(world_size_));
  }
  Fingerprint fp;
  fp.op = OpKind::kAllgatherv;
  fp.dtype = dtype;
  fp.count = count;
  fp.counts_hash = HashCounts(counts);
  Run(fp, counts,
      [&](uint32_t tag) { EngineAllgatherv(send, count, recv, counts, dtype, tag); });
}

void Comm::Allreduce(void* data, std::size_t count, DType dtype, ReduceOp op) {
  Fingerprint fp;
  fp.op = OpKind::kAllreduce;
  fp.dtype = dtype;
  fp.count = count;
  fp.reduce = static_cast<int64_t>(op);
  Run(fp, {}, [&](uint32_t tag) { EngineAllreduce(data, count, dtype, op, tag); });
}

void Comm::Broadcast(void* data, std::size_t count, DType dtype, int root) {
  if (root < 0 || root >= world_size_) {
    throw std::invalid_argument("Broadcast: root " + std::to_string(root) + " not in [0, " +
                                std::to_string(world_size_) + ")");
  }
  Fingerprint fp;
  fp.op = OpKind::kBroadcast;
  fp.dtype = dtype;
  fp.count = count;
  fp.root = root;
  Run(fp, {}, [&](uint32_t tag) { EngineBroadcast(data, count, dtype, root, tag); });
}

void Comm::ReduceScatter(const void* send, void* recv, std::size_t recv_count, DType dtype) {
  Fingerprint fp;
  fp.op = OpKind::kReduceScatter;
  fp.dtype = dtype;
  fp.count = recv_count;
  fp.reduce = static_cast<int64_t>(ReduceOp::kSum);
  Run(fp, {}, [&](uint32_t tag) { EngineReduceScatter(send, recv, recv_count, dtype, tag); });
}

void Comm::Barrier() {
  Fingerprint fp;
  fp.op = OpKind::kBarrier;
  Run(fp, {}, [&](uint32_t tag) { EngineBarrier(tag); });
}

}  // namespace ddp::comm

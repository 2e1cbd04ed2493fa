#include "bench/recorder/cases.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <source_location>
#include <vector>

#include "bench/recorder/bare_gloo.h"
#include "core/comm/make_comm.h"
#include "core/trace/recorder.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

comm::Fingerprint Fp(comm::OpKind op, uint64_t count) {
  comm::Fingerprint f;
  f.op = op;
  f.dtype = comm::DType::kFloat64;
  f.count = count;
  f.reduce = op == comm::OpKind::kAllreduce ? 0 : -1;
  return f;
}

trace::FlightRecorder::Identity Id() {
  return {"bench", "gloo", 0, 64, std::chrono::seconds(60), false};
}

// What Comm::Run adds per collective: the entry (with the start time it
// reads anyway for the deadline) and the exit with a second clock reading.
void Recorded(benchmark::State& state, comm::OpKind op, std::size_t world) {
  trace::FlightRecorder rec(Id(), trace::kDefaultEntries);
  comm::Fingerprint fp = Fp(op, 497);
  const std::vector<std::size_t> counts(op == comm::OpKind::kAllgatherv ? world : 0, 497);
  const auto site = std::source_location::current();
  int64_t seq = 0;
  for (auto _ : state) {
    fp.seq = seq;
    rec.Enter(fp, counts, site, Clock::now());
    rec.Exit(seq, trace::State::kCompleted, Clock::now());
    ++seq;
  }
  benchmark::DoNotOptimize(rec.in_flight());
}

void RecordedNoClock(benchmark::State& state) {
  trace::FlightRecorder rec(Id(), trace::kDefaultEntries);
  comm::Fingerprint fp = Fp(comm::OpKind::kAllreduce, 497);
  const auto site = std::source_location::current();
  const auto now = Clock::now();
  int64_t seq = 0;
  for (auto _ : state) {
    fp.seq = seq;
    rec.Enter(fp, {}, site, now);
    rec.Exit(seq, trace::State::kCompleted, now);
    ++seq;
  }
}

void TwoClockReads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(Clock::now());
    benchmark::DoNotOptimize(Clock::now());
  }
}

std::unique_ptr<comm::Comm> OneRankComm(const std::string& rdzv, const std::string& name,
                                        std::size_t entries) {
  comm::CommOptions o;
  o.rank = 0;
  o.world_size = 1;
  o.rdzv = rdzv;
  o.run_id = "bench_recorder";
  o.name = name;
  o.timeout = std::chrono::seconds(60);
  o.checked = false;
  o.trace_entries = entries;
  o.trace_dir = rdzv + "/trace";
  return comm::MakeComm(o);
}

}  // namespace

OneRankWorlds RegisterCases(const std::string& rdzv) {
  benchmark::RegisterBenchmark(kRecorderAllreduce, Recorded, comm::OpKind::kAllreduce, 1);
  benchmark::RegisterBenchmark(kRecorderAllgatherv, Recorded, comm::OpKind::kAllgatherv, 64);
  benchmark::RegisterBenchmark(kRecorderNoClock, RecordedNoClock);
  benchmark::RegisterBenchmark(kTwoClockReads, TwoClockReads);

  // One-rank worlds, made once: every repetition reuses them.
  OneRankWorlds w;
  w.bare = std::make_shared<BareGloo>(rdzv, "bench_recorder/bare", 0, 1);
  w.recorder_on = OneRankComm(rdzv, "on", trace::kDefaultEntries);
  w.recorder_off = OneRankComm(rdzv, "off", 0);
  benchmark::RegisterBenchmark(kBareGloo, [bare = w.bare](benchmark::State& state) {
    double x = 1;
    for (auto _ : state) bare->Allreduce(&x);
    benchmark::DoNotOptimize(x);
  });
  for (const auto& [name, comm] : {std::pair{kCommOn, w.recorder_on}, std::pair{kCommOff, w.recorder_off}}) {
    benchmark::RegisterBenchmark(name, [c = comm](benchmark::State& state) {
      std::vector<double> x = {1};
      for (auto _ : state) c->Allreduce(std::span(x));
      benchmark::DoNotOptimize(x.data());
    });
  }
  return w;
}

}  // namespace ddp::bench

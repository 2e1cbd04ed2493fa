#include "bench/recorder/two_ranks.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "bench/recorder/bare_gloo.h"
#include "core/comm/make_comm.h"
#include "core/launch/spawn.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ThreadCpuUs() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int Rank(const launch::RankEnv& env, int repetitions, int calls) {
  auto make = [&](const std::string& name, std::size_t entries) {
    comm::CommOptions o = comm::OptionsFromRankEnv(env);
    o.name = name;
    o.timeout = std::chrono::seconds(60);
    o.checked = false;
    o.trace_entries = entries;
    return comm::MakeComm(o);
  };
  auto on = make("on", trace::kDefaultEntries);
  auto off = make("off", 0);
  BareGloo bare(env.rdzv, env.run_id + "/bare", env.rank, env.world_size);
  std::vector<double> x = {1};
  auto run = [&](int variant) {
    for (int i = 0; i < calls; ++i) {
      if (variant == 0) bare.Allreduce(x.data());
      if (variant == 1) on->Allreduce(std::span(x));
      if (variant == 2) off->Allreduce(std::span(x));
    }
  };
  for (int v = 0; v < 3; ++v) run(v);  // warm-up: connections, caches
  for (int rep = 0; rep < repetitions; ++rep) {
    for (int k = 0; k < 3; ++k) {
      const int variant = (rep + k) % 3;  // the same rotation on both ranks
      bare.Barrier();
      const double c0 = ThreadCpuUs();
      const auto t0 = Clock::now();
      run(variant);
      const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
      const double cpu = (ThreadCpuUs() - c0) / calls;
      if (env.rank == 0) std::printf("T %d %.6f %.6f\n", variant, us, cpu);
    }
  }
  return 0;
}

}  // namespace

TwoRankTimes MeasureTwoRanks(int repetitions, int calls) {
  launch::SpawnOptions so;
  so.deadline = std::chrono::seconds(300);
  so.fail_fast = true;
  so.run_id = "bench_recorder_w2";
  const auto r = launch::SpawnRanks(
      2, [&](const launch::RankEnv& env) { return Rank(env, repetitions, calls); }, so);
  TwoRankTimes t;
  if (!r.all_ok()) {
    t.error = r.Summary();
    return t;
  }
  std::istringstream in(r.ranks[0].stdout_text);
  std::string tag;
  int variant = 0;
  double us = 0, cpu = 0;
  while (in >> tag >> variant >> us >> cpu) {
    if (tag != "T") continue;
    (variant == 0 ? t.bare_us : variant == 1 ? t.on_us : t.off_us).push_back(us);
    (variant == 0 ? t.bare_cpu_us : variant == 1 ? t.on_cpu_us : t.off_cpu_us).push_back(cpu);
  }
  return t;
}

}  // namespace ddp::bench

#include "core/harness/world.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <sstream>
#include <vector>

#include "core/cli/config_error.h"
#include "core/comm/errors.h"
#include "core/comm/make_comm.h"
#include "core/comm/options.h"
#include "core/harness/exchange.h"
#include "core/launch/failure_report.h"
#include "core/launch/interrupt.h"
#include "core/launch/rank_env.h"
#include "core/launch/spawn.h"
#include "core/store/store.h"

namespace ddp::harness {
namespace {

// Rank 0 hands its value to the spawning parent on one stdout line.
constexpr char kResultMarker[] = "@@ddp-result ";
// A rank that met a usage error says so on one stderr line.
constexpr char kUsageMarker[] = "@@ddp-usage ";

std::string g_first_usage_error;
// Launched mode: the launcher's store stopped answering. Every later world
// would meet through it too, so they fail at once instead of each waiting
// out a deadline.
std::string g_store_failure;
// Launched mode: a peer died or stopped answering. The launcher's ranks are
// the same processes in every world, so later worlds would each wait out
// their rendezvous for it: they fail at once, the rank ends, and the
// launcher stops the run within the collective deadline (issue 35).
std::string g_peer_failure;

[[noreturn]] void ThrowUsage(const std::string& message) {
  if (g_first_usage_error.empty()) g_first_usage_error = message;
  throw launch::ConfigError(message);
}

void ThrowIfInterrupted() {
  if (const int sig = launch::InterruptSignal()) throw Interrupted{sig};
}


comm::CommOptions OptionsFor(const launch::RankEnv& env, const WorldOptions& o) {
  comm::CommOptions c = comm::OptionsFromRankEnv(env);
  c.backend = o.backend;
  c.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  c.checked = o.checked;
  c.share_gpu = c.share_gpu || o.share_gpu;
  return c;
}

std::string Tail(const std::string& text, std::size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  std::string out;
  const std::size_t start = lines.size() > max_lines ? lines.size() - max_lines : 0;
  for (std::size_t i = start; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// How much longer than the collective deadline the ranks' start-up may take
// (rendezvous, communicator init, NCCL's first collective: options.cc). The
// world's own bound must cover it: on NCCL the start-up bound is at least
// 60 s, and a world killed at 4 x 1.5 s + 10 s while several CUDA contexts
// start on one GPU would never reach the hang it was built to show.
double StartupAllowanceS(const WorldOptions& o) {
  comm::CommOptions c;
  c.backend = o.backend;
  const auto deadline = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  try {
    const auto startup = comm::ResolveStartupTimeout(c, deadline);
    return std::max(0.0, static_cast<double>(startup.count()) / 1000.0 - o.timeout_s);
  } catch (const launch::ConfigError& e) {
    ThrowUsage(e.what());
  }
}

WorldResult RunSpawned(const WorldOptions& o, const RankBody& body) {
  WorldResult r;
  r.spawned = true;
  launch::SpawnOptions so;
  const double deadline = WorldDeadlineS(o);
  so.deadline = std::chrono::milliseconds(static_cast<long long>(deadline * 1000));
  so.backend = o.backend;
  so.share_gpu = o.share_gpu;
  so.run_id = "world";
  so.forward_signals = launch::InterruptHandlersInstalled();
  try {
    r.run = launch::SpawnRanks(
        o.world_size,
        [&](const launch::RankEnv& env) -> int {
          try {
            auto comm = comm::MakeComm(OptionsFor(env, o));
            const results::Json v = body(*comm);
            comm->Finish();
            std::printf("%s%s\n", kResultMarker, Dump(v).c_str());
            std::fflush(stdout);
            return 0;
          } catch (const launch::ConfigError& e) {
            launch::ReportFailure(false, e.what());
            std::fprintf(stderr, "%s%s\n", kUsageMarker, e.what());
            std::fflush(stderr);
            return launch::kExitUsage;
          } catch (const std::exception& e) {
            ReportRankFailure(e);
            std::fprintf(stderr, "rank %d: %s\n", env.rank, e.what());
            std::fflush(stderr);
            return 3;
          }
        },
        so);
  } catch (const launch::ConfigError& e) {
    ThrowUsage(e.what());  // e.g. the open-file limit
  }
  ThrowIfInterrupted();
  for (const auto& rank : r.run.ranks) {
    const std::string& err = rank.stderr_text;
    const auto pos = err.find(kUsageMarker);
    if (pos == std::string::npos) continue;
    const std::size_t start = pos + sizeof(kUsageMarker) - 1;
    ThrowUsage(err.substr(start, err.find('\n', start) - start));
  }
  // A rank's value counts even when a peer failed: a repro of undefined
  // behaviour wants to know what the surviving ranks computed.
  for (const auto& rank : r.run.ranks) {
    results::Json value;
    const std::string& out = rank.stdout_text;
    const auto pos = out.rfind(kResultMarker);
    if (pos != std::string::npos) {
      const std::size_t start = pos + sizeof(kResultMarker) - 1;
      const auto end = out.find('\n', start);
      try {
        value = results::ParseJson(out.substr(start, end == std::string::npos ? end : end - start));
      } catch (const std::exception& e) {
        r.failure += "rank " + std::to_string(rank.rank) + "'s result is not JSON: " + e.what() +
                     "\n";
      }
    }
    r.rank_values.push_back(value);
  }
  if (!r.rank_values.empty() && !r.rank_values[0].is_null()) {
    r.value = r.rank_values[0];
    r.has_value = true;
  }
  if (r.run.first_failed_rank >= 0) r.failure = "first failure: " + r.run.Culprit() + "\n";
  for (const auto& rank : r.run.ranks) {
    if (rank.ok()) continue;
    r.failure += "rank " + std::to_string(rank.rank) + ": " + rank.Describe() + "\n";
    r.failure += Tail(rank.stderr_text, 12);
  }
  if (r.run.all_ok() && !r.has_value && r.failure.empty()) r.failure = "rank 0 returned no result";
  r.ok = r.run.all_ok() && r.has_value;
  return r;
}

// After a failed world: is the store still answering? (Briefly.)
void CheckStore(const launch::RankEnv& env) {
  try {
    store::OpenStore(env.rdzv, std::chrono::milliseconds(250));
  } catch (const std::exception& e) {
    g_store_failure = e.what();
  }
}

WorldResult RunLaunched(const WorldOptions& o, const RankBody& body) {
  WorldResult r;
  if (!g_store_failure.empty()) {
    r.failure = "not run: the rendezvous store failed earlier: " + g_store_failure;
    return r;
  }
  if (!g_peer_failure.empty()) {
    r.failure = "not run: a peer failed in an earlier world: " + g_peer_failure;
    return r;
  }
  launch::RankEnv env;
  try {
    env = launch::RankEnvFromEnvironment();
    auto comm = comm::MakeComm(OptionsFor(env, o));
    r.rank_values = ExchangeValues(*comm, body(*comm));
    comm->Finish();
    r.value = r.rank_values[0];
    r.ok = r.has_value = true;
  } catch (const launch::ConfigError& e) {
    launch::ReportFailure(false, e.what());
    ThrowUsage(e.what());
  } catch (const std::exception& e) {
    ReportRankFailure(e);
    r.failure = e.what();
    CheckStore(env);
    if (dynamic_cast<const comm::PeerError*>(&e) || dynamic_cast<const comm::DeadlineError*>(&e)) {
      g_peer_failure = e.what();
    }
  }
  return r;
}

}  // namespace

std::string FirstUsageError() { return g_first_usage_error; }

void ReportRankFailure(const std::exception& e) {
  const bool peer = dynamic_cast<const comm::PeerError*>(&e) != nullptr ||
                    dynamic_cast<const comm::DeadlineError*>(&e) != nullptr;
  launch::ReportFailure(peer, e.what());
}

bool LaunchedAsRank() { return launch::LaunchedAsRank(); }

double WorldDeadlineS(const WorldOptions& o) {
  return o.world_deadline_s > 0 ? o.world_deadline_s : 4 * o.timeout_s + 10 + StartupAllowanceS(o);
}

int LauncherRank() {
  if (!LaunchedAsRank()) return 0;
  return launch::RankEnvFromEnvironment().rank;
}

int LauncherWorldSize() {
  if (!LaunchedAsRank()) return 0;
  return launch::RankEnvFromEnvironment().world_size;
}

WorldResult RunWorld(const WorldOptions& options, const RankBody& body) {
  ThrowIfInterrupted();
  // After a usage error the binary exits 2 anyway: do not run more worlds.
  if (!g_first_usage_error.empty()) throw launch::ConfigError(g_first_usage_error);
  return LaunchedAsRank() ? RunLaunched(options, body) : RunSpawned(options, body);
}

}  // namespace ddp::harness

#include "core/comm/make_comm.h"

#include <atomic>

#include "core/comm/gloo_comm.h"
#include "core/launch/rank_env.h"
#ifdef DDP_HAVE_NCCL
#include "core/comm/nccl_comm.h"
#endif

namespace ddp::comm {
namespace {

// Default communicator names: "comm0", "comm1", ... in creation order.
std::atomic<int> g_comm_counter{0};

[[maybe_unused]] std::string JoinedBackends() {
  std::string s;
  for (const auto& b : AvailableBackends()) s += (s.empty() ? "" : ", ") + b;
  return s;
}

}  // namespace

std::vector<std::string> AvailableBackends() {
#ifdef DDP_HAVE_NCCL
  return {"gloo", "nccl"};
#else
  return {"gloo"};
#endif
}

std::unique_ptr<Comm> MakeComm(const CommOptions& options) {
  const bool known = options.backend == "gloo" || options.backend == "nccl";
  if (!known) {
    throw ConfigError("unknown backend '" + options.backend + "': allowed values are gloo, nccl");
  }
#ifndef DDP_HAVE_NCCL
  if (options.backend == "nccl") {
    throw ConfigError(
        "backend 'nccl' is not built into this binary (CUDA/NCCL were not found at build "
        "time): available backends: " +
        JoinedBackends());
  }
#endif
  // The launcher's checks and messages (torchrun's variable names), in
  // RankEnv::Validate()'s order; a store object stands in for the spec.
  launch::ValidateWorld(launch::Launcher::kTorchrun, options.rank, options.world_size,
                        options.local_rank, options.local_world_size);
  if (!options.store) launch::ValidateRdzv(options.rdzv);
  launch::ValidateRunId(options.run_id);

  CommSetup setup;
  setup.rank = options.rank;
  setup.world_size = options.world_size;
  setup.backend = options.backend;
  setup.timeout = ResolveTimeout(options);
  setup.startup_timeout = ResolveStartupTimeout(options, setup.timeout);
  setup.checked = ResolveChecked(options);
  setup.trace_entries = ResolveTraceEntries(options);
  const std::string name =
      options.name.empty() ? "comm" + std::to_string(g_comm_counter++) : options.name;
  // Each store operation (a Redis server's reply) keeps the deadline: a
  // store that does not answer is not a slow start.
  auto base = options.store ? options.store : store::OpenStore(options.rdzv, setup.timeout);
  setup.name = name;
  setup.run_id = options.run_id;
  setup.trace_dir = ResolveTraceDir(options, base->Describe());
  setup.store = store::PrefixedStore(base, options.run_id + "/" + name);
  // The rendezvous waits for peers' keys up to the start-up bound; once
  // connected, the store serves failure-time dump requests, bounded by the
  // deadline.
  setup.store->set_timeout(setup.startup_timeout);
  const auto store = setup.store;
  const auto deadline = setup.timeout;

#ifdef DDP_HAVE_NCCL
  std::unique_ptr<Comm> comm = options.backend == "nccl" ? MakeNcclComm(options, std::move(setup))
                                                         : MakeGlooComm(options, std::move(setup));
#else
  std::unique_ptr<Comm> comm = MakeGlooComm(options, std::move(setup));
#endif
  // Connected: from now on the store serves only failure-time dump requests.
  store->set_timeout(deadline);
  comm->StartWatchdog();
  return comm;
}

}  // namespace ddp::comm

// Where SpawnRanks puts its ranks when they should not all share this
// host's network: test hosts made of network namespaces (see
// core/launch/testing/netns.h), so that a pair binary's own spawned worlds —
// rows that abort or hang a rank on purpose included, under the binary's
// own supervisor — run with every rank on its own network stack and
// address, meeting through a Redis store on one of them.
//
//   DDP_SPAWN_HOSTS=NS0=ADDR0,NS1=ADDR1,...  rank r enters network namespace
//       NS(r mod H) (/run/netns/NS) right after the fork and binds Gloo to
//       ADDR(r mod H) (DDP_GLOO_ADDR)
//   DDP_SPAWN_RDZV=redis://HOST:PORT  spawned worlds meet there (each under
//       a run id of its own, deleted afterwards) instead of a fresh directory
//
// Both are for experiments and tests (the ranks still share one machine's
// CPUs, filesystem and supervisor); a real cluster uses a launcher.
#pragma once

#include <string>
#include <vector>

#include "core/launch/rank_env.h"

namespace ddp::launch {

inline constexpr char kEnvSpawnHosts[] = "DDP_SPAWN_HOSTS";
inline constexpr char kEnvSpawnRdzv[] = "DDP_SPAWN_RDZV";

struct SpawnHost {
  std::string netns;    // a name under /run/netns
  std::string address;  // Gloo binds here
};

// Parses DDP_SPAWN_HOSTS (empty when unset); throws ConfigError naming it.
std::vector<SpawnHost> SpawnHostsFromEnvironment(const EnvLookup& env = ProcessEnv);

// In a forked rank: enters the host's network namespace and sets
// DDP_GLOO_ADDR. Throws ConfigError when the namespace cannot be entered.
void EnterSpawnHost(const SpawnHost& host);

}  // namespace ddp::launch

// How to build a communicator: backend, rank, rendezvous, deadline, mode.
//
// Unset optional fields come from the environment (documented in README.md):
//   DDP_PITFALLS_TIMEOUT   deadline of every collective, seconds (default 60)
//   DDP_PITFALLS_STARTUP_TIMEOUT  the start-up bound, seconds: the rendezvous,
//                          the engine's connection (Gloo's connect, NCCL's
//                          ncclCommInitRankConfig) and, on NCCL, which
//                          connects lazily inside it, the first collective
//                          (Gloo has connected before: its first collective
//                          has the deadline); default: on NCCL max(deadline,
//                          60 s), so a short collective deadline does not also
//                          cut short its slow start; on Gloo the deadline
//   DDP_PITFALLS_CHECK     1: checked mode (fingerprints first), 0: raw (default)
//   DDP_PITFALLS_TRACE_ENTRIES  flight recorder ring size per communicator
//                          (default 2000; 0 turns the recorder off)
//   DDP_PITFALLS_TRACE_DIR where ranks write their dumps rank<R>.json (default:
//                          <rendezvous dir>/trace with a file store, so a world
//                          spawned into a fresh rendezvous folder cleans them up
//                          with it; $TMPDIR/ddp-pitfalls-trace/<run id> otherwise)
//   DDP_GLOO_ADDR          address Gloo binds (default 127.0.0.1 with a file
//                          store, this host's name with Redis)
//   DDP_GLOO_ALLGATHERV    ring (default) or direct: the Gloo allgatherv's
//                          algorithm (core/comm/gloo_allgatherv.h)
//   DDP_GLOO_ALLGATHERV_PIECE_KIB  the size its blocks are cut into, KiB, in
//                          [64, 65536] (default 512; gloo_allgatherv.h)
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/collective/types.h"
#include "core/launch/rank_env.h"
#include "core/store/store.h"

namespace ddp::comm {

inline constexpr char kEnvTimeout[] = "DDP_PITFALLS_TIMEOUT";
inline constexpr char kEnvStartupTimeout[] = "DDP_PITFALLS_STARTUP_TIMEOUT";
inline constexpr char kEnvCheck[] = "DDP_PITFALLS_CHECK";
inline constexpr char kEnvTraceEntries[] = "DDP_PITFALLS_TRACE_ENTRIES";
inline constexpr char kEnvTraceDir[] = "DDP_PITFALLS_TRACE_DIR";
// When set, every communicator appends one line to this file as it ends:
// its backend, world size, rank, how many collectives it entered, and its
// store (which names the world and the communicator). core/testing's cost
// model of the NCCL twins counts with it (core/testing/README.md).
inline constexpr char kEnvCountFile[] = "DDP_PITFALLS_COUNT_FILE";
inline constexpr char kEnvGlooAddr[] = "DDP_GLOO_ADDR";
inline constexpr char kEnvGlooAllgatherv[] = "DDP_GLOO_ALLGATHERV";
inline constexpr char kEnvGlooAllgathervPieceKib[] = "DDP_GLOO_ALLGATHERV_PIECE_KIB";
inline constexpr std::chrono::milliseconds kDefaultTimeout = std::chrono::seconds(60);
inline constexpr std::chrono::milliseconds kDefaultStartupTimeout = std::chrono::seconds(60);

struct CommOptions {
  std::string backend = "gloo";  // "gloo" or "nccl"
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string rdzv;                       // directory or redis://host:port
  // Overrides rdzv when set. After the rendezvous, this communicator's
  // watchdog thread polls it for dump requests: do not share a Redis store
  // object with code that uses it at the same time (hiredis is not
  // thread-safe); a file store may be shared.
  std::shared_ptr<store::Store> store;
  std::string run_id = "run";
  // Key namespace of this communicator in the store. Empty: "comm<k>", k
  // counting the communicators this process created (the same on every rank
  // when ranks create them in the same order, as torch.distributed assumes).
  std::string name;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> startup_timeout;  // the start-up bound (above)
  std::optional<bool> checked;
  std::optional<std::size_t> trace_entries;  // flight recorder ring size; 0: off
  std::string trace_dir;                      // where dumps go (see above)
  std::string bind_address;
  bool share_gpu = false;  // NCCL: several local ranks on one GPU (functional only)
  // Gloo only: the allgatherv algorithm the communicator starts with
  // (Comm::set_gloo_allgatherv changes it); every rank must choose the same
  // (checked mode compares it).
  std::optional<GlooAllgathervAlgorithm> gloo_allgatherv;
  // Gloo only: the piece size of both allgatherv algorithms, bytes; every
  // rank must choose the same (the pieces are the messages; checked mode
  // compares it).
  std::optional<std::size_t> gloo_allgatherv_piece_bytes;
};

// From a launcher's view of the rank (backend: env.backend, else "gloo").
CommOptions OptionsFromRankEnv(const launch::RankEnv& env);
// RankEnvFromEnvironment() + OptionsFromRankEnv(); throws ConfigError.
CommOptions OptionsFromEnvironment();

// The effective settings, with the environment filling unset fields. Each
// throws ConfigError naming the variable for an unparsable value.
std::chrono::milliseconds ResolveTimeout(const CommOptions& options,
                                         const launch::EnvLookup& env = launch::ProcessEnv);
// `deadline` is ResolveTimeout's; the default is max(deadline, 60 s) for the
// nccl backend, `deadline` for gloo (options.cc says why).
std::chrono::milliseconds ResolveStartupTimeout(const CommOptions& options,
                                                std::chrono::milliseconds deadline,
                                                const launch::EnvLookup& env = launch::ProcessEnv);
bool ResolveChecked(const CommOptions& options,
                    const launch::EnvLookup& env = launch::ProcessEnv);
GlooAllgathervAlgorithm ResolveGlooAllgatherv(const CommOptions& options,
                                              const launch::EnvLookup& env = launch::ProcessEnv);
std::size_t ResolveGlooAllgathervPieceBytes(const CommOptions& options,
                                            const launch::EnvLookup& env = launch::ProcessEnv);
std::size_t ResolveTraceEntries(const CommOptions& options,
                                const launch::EnvLookup& env = launch::ProcessEnv);
// `store_description` is the rendezvous store's Describe() ("file:/dir" or
// "redis://...").
std::string ResolveTraceDir(const CommOptions& options, const std::string& store_description,
                            const launch::EnvLookup& env = launch::ProcessEnv);

}  // namespace ddp::comm

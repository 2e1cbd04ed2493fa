// Checked mode: the fingerprint of one collective call, exchanged across
// ranks before the engine is touched (like TORCH_DISTRIBUTED_DEBUG=DETAIL).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/collective/types.h"

namespace ddp::comm {

struct Fingerprint {
  OpKind op = OpKind::kBarrier;
  DType dtype = DType::kFloat32;
  int64_t seq = 0;       // per-communicator call counter
  uint64_t count = 0;    // this rank's element count (allgatherv: its own contribution)
  int64_t root = -1;     // broadcast root, else -1
  int64_t reduce = -1;   // ReduceOp for allreduce/reduce_scatter, else -1
  uint64_t counts_hash = 0;  // allgatherv: hash of the per-rank counts this rank passed
  // How the engine will run the call, where every rank must run it the same
  // way or the messages do not pair up: for a Gloo allgatherv the algorithm
  // and the piece size (GlooAllgathervVariant). 0: nothing to agree on.
  uint64_t engine_variant = 0;

  static constexpr std::size_t kBytes = 8 * 8;
  std::array<char, kBytes> Serialize() const;
  static Fingerprint Deserialize(const char* bytes);

  // "allgather seq=3 float32 count=3" (plus root/reduce where they matter).
  std::string ToString() const;
  bool operator==(const Fingerprint&) const = default;
};

// A Gloo allgatherv's engine_variant: piece bytes times two, plus one for
// the direct exchange; and its readable form, "ring in 512 KiB pieces".
uint64_t GlooAllgathervVariant(GlooAllgathervAlgorithm algorithm, std::size_t piece_bytes);
std::string GlooAllgathervVariantName(uint64_t variant);

// FNV-1a over the counts: equal vectors give equal hashes on every rank.
uint64_t HashCounts(std::span<const std::size_t> counts);

// Compares the fingerprints of all ranks (index = rank). Returns the message
// for the first disagreement (op, seq, dtype, count, root, reduction,
// allgatherv counts, then how the engine runs it), naming the ranks on each
// side and their values; or nullopt when they agree. `counts` is this rank's allgatherv counts (used to
// check counts[r] against rank r's contribution), empty otherwise. The result
// is the same on every rank, since every rank sees the same fingerprints.
std::optional<std::string> FindMismatch(const std::vector<Fingerprint>& all,
                                        std::span<const std::size_t> counts = {});

}  // namespace ddp::comm

// The workloads of bench/padding: how many float64 elements each rank
// contributes to one variable-length gather, and what each way of moving
// them costs in bytes.
//
// A skew profile turns a nominal per-rank payload of n elements into W
// per-rank lengths. The profiles are deterministic (no seed): the "drawn"
// ones take evenly spaced quantiles of their distribution, so W = 4 already
// shows the whole spread and every run measures the same lengths.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ddp::bench {

// Every element is one float64 (a score, an index or a label of the
// (index, score, label) triples the wrong_all_gather fixes move).
inline constexpr std::int64_t kElementBytes = 8;
// Largest payload per rank the binary accepts (64 MiB).
inline constexpr std::int64_t kMaxPayloadBytes = std::int64_t{64} << 20;

enum class Profile { kEqual, kShortTail, kUniform10, kStraggler, kHeavyTailed };

// "equal", "short_tail", "uniform10", "straggler", "heavy_tailed".
const char* Name(Profile p);
std::optional<Profile> ParseProfile(const std::string& name);
const std::vector<Profile>& AllProfiles();

// Per-rank lengths (elements) for a nominal n >= 1 elements per rank:
//   equal         n on every rank
//   short_tail    n, except the last rank, whose tail batch is short: n/2
//   uniform10     n * (1 + u_r), u_r the W evenly spaced quantiles
//                 (r + 1/2)/W of U[-0.1, +0.1]
//   straggler     n, except the last rank, which holds 2n
//   heavy_tailed  the (r + 1/2)/W quantiles of a Pareto(alpha = 1.5),
//                 scaled to a mean of n (W = 4: 0.52n, 0.65n, 0.92n, 1.91n)
// Every length is at least 1 (rounded to the nearest element).
std::vector<std::int64_t> Lengths(Profile p, int world_size, std::int64_t n);

// "1K" = 1 KiB, "16M" = 16 MiB, or plain bytes; a multiple of 8 in
// 8..kMaxPayloadBytes. nullopt for anything else.
std::optional<std::int64_t> ParsePayload(const std::string& text);
// 1024 -> "1KiB", 16777216 -> "16MiB", 1000 -> "1000B".
std::string PayloadName(std::int64_t bytes);

// The ways to gather the lengths above onto every rank. The floor methods
// move the same total bytes as equal shares (no sizes, no padding); the
// floor of a case is the fastest of them in each repetition.
enum class Method {
  kFloorAllgather,   // (d) one all_gather of ceil(sum/W) per rank
  kFloorAllgatherv,  // (d) one allgatherv with ceil(sum/W) per rank
  kFloorAllgathervDirect,  // (d) the same through Gloo's direct-exchange
                           //     allgatherv (gloo_allgatherv.h); Gloo only
  kPadGatherTrim,    // (a) sizes exchange, pad to max, all_gather, trim
  kAllgatherv,       // (b) sizes exchange, the engine's allgatherv
  kKnownCounts,      // (b') the engine's allgatherv with counts every rank
                     //      already knows (from the sharding): no exchange
  kKnownCountsDirect,  // (b') the same through Gloo's direct-exchange
                       //      allgatherv; Gloo only
  kBoundedPad,       // (e) one all_gather of (length, share padded to a bound
                     //     every rank knows): the sizes ride with the data
  kGroupedBroadcast, // (c) NCCL: sizes exchange, W broadcasts in one group
  kGroupedSendRecv,  // (c) NCCL: sizes exchange, W-1 send/recv pairs in one group
};
const char* Name(Method m);  // "floor_allgather", "pad_gather_trim", ...
bool IsFloor(Method m);
// The Gloo direct-exchange twins of floor_allgatherv and known_counts: the
// same calls on a communicator whose allgatherv is the direct exchange.
bool IsDirect(Method m);

// What one gather puts on the wire, in bytes of float64 elements.
struct GatherCost {
  double useful_bytes = 0;         // sum of the lengths * 8: the data asked for
  double wire_bytes_per_rank = 0;  // bytes a rank receives, mean over ranks
                                   // (sizes exchange included): what any
                                   // all_gather algorithm must deliver to it
  double wasted_bytes = 0;         // gathered but not data: W*max - sum
                                   // (padding; floor: its rounding up)
};
GatherCost Cost(Method m, std::span<const std::int64_t> lengths);

// Elements each rank sends in the floor gather: ceil(sum / W).
std::int64_t FloorCount(std::span<const std::int64_t> lengths);

}  // namespace ddp::bench

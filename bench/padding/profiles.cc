#include "bench/padding/profiles.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ddp::bench {
namespace {

constexpr double kParetoAlpha = 1.5;
constexpr double kUniformSpread = 0.1;

std::int64_t AtLeastOne(double x) { return std::max<std::int64_t>(1, std::llround(x)); }

// The (r + 1/2)/W quantile: evenly spaced, symmetric, never 0 or 1.
double Quantile(int r, int world_size) { return (r + 0.5) / world_size; }

}  // namespace

const char* Name(Profile p) {
  switch (p) {
    case Profile::kEqual: return "equal";
    case Profile::kShortTail: return "short_tail";
    case Profile::kUniform10: return "uniform10";
    case Profile::kStraggler: return "straggler";
    case Profile::kHeavyTailed: return "heavy_tailed";
  }
  return "?";
}

const std::vector<Profile>& AllProfiles() {
  static const std::vector<Profile> all = {Profile::kEqual, Profile::kShortTail,
                                           Profile::kUniform10, Profile::kStraggler,
                                           Profile::kHeavyTailed};
  return all;
}

std::optional<Profile> ParseProfile(const std::string& name) {
  for (Profile p : AllProfiles()) {
    if (name == Name(p)) return p;
  }
  return std::nullopt;
}

std::vector<std::int64_t> Lengths(Profile p, int world_size, std::int64_t n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(world_size), n);
  const std::size_t last = out.size() - 1;
  switch (p) {
    case Profile::kEqual:
      break;
    case Profile::kShortTail:
      out[last] = AtLeastOne(n / 2.0);
      break;
    case Profile::kUniform10:
      for (int r = 0; r < world_size; ++r) {
        const double u = kUniformSpread * (2 * Quantile(r, world_size) - 1);
        out[static_cast<std::size_t>(r)] = AtLeastOne(n * (1 + u));
      }
      break;
    case Profile::kStraggler:
      out[last] = 2 * n;
      break;
    case Profile::kHeavyTailed: {
      // Pareto(x_m = 1, alpha) quantile: (1 - q)^(-1/alpha).
      std::vector<double> q(out.size());
      for (int r = 0; r < world_size; ++r) {
        q[static_cast<std::size_t>(r)] =
            std::pow(1 - Quantile(r, world_size), -1 / kParetoAlpha);
      }
      const double mean = std::accumulate(q.begin(), q.end(), 0.0) / world_size;
      for (std::size_t r = 0; r < out.size(); ++r) out[r] = AtLeastOne(n * q[r] / mean);
      break;
    }
  }
  return out;
}

std::optional<std::int64_t> ParsePayload(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::string digits = text;
  std::int64_t scale = 1;
  if (digits.back() == 'K') scale = 1024;
  if (digits.back() == 'M') scale = 1024 * 1024;
  if (scale != 1) digits.pop_back();
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  const std::int64_t bytes = std::stoll(digits) * scale;
  if (bytes < kElementBytes || bytes > kMaxPayloadBytes || bytes % kElementBytes != 0) {
    return std::nullopt;
  }
  return bytes;
}

std::string PayloadName(std::int64_t bytes) {
  if (bytes % (1024 * 1024) == 0) return std::to_string(bytes / (1024 * 1024)) + "MiB";
  if (bytes % 1024 == 0) return std::to_string(bytes / 1024) + "KiB";
  return std::to_string(bytes) + "B";
}

const char* Name(Method m) {
  switch (m) {
    case Method::kFloorAllgather: return "floor_allgather";
    case Method::kFloorAllgatherv: return "floor_allgatherv";
    case Method::kFloorAllgathervDirect: return "floor_allgatherv_direct";
    case Method::kPadGatherTrim: return "pad_gather_trim";
    case Method::kAllgatherv: return "allgatherv";
    case Method::kKnownCounts: return "known_counts";
    case Method::kKnownCountsDirect: return "known_counts_direct";
    case Method::kBoundedPad: return "bounded_pad";
    case Method::kGroupedBroadcast: return "grouped_bcast";
    case Method::kGroupedSendRecv: return "grouped_sendrecv";
  }
  return "?";
}

bool IsFloor(Method m) {
  return m == Method::kFloorAllgather || m == Method::kFloorAllgatherv ||
         m == Method::kFloorAllgathervDirect;
}
bool IsDirect(Method m) {
  return m == Method::kFloorAllgathervDirect || m == Method::kKnownCountsDirect;
}

std::int64_t FloorCount(std::span<const std::int64_t> lengths) {
  const std::int64_t w = static_cast<std::int64_t>(lengths.size());
  const std::int64_t sum = std::accumulate(lengths.begin(), lengths.end(), std::int64_t{0});
  return (sum + w - 1) / w;
}

GatherCost Cost(Method m, std::span<const std::int64_t> lengths) {
  const double w = static_cast<double>(lengths.size());
  const double sum =
      static_cast<double>(std::accumulate(lengths.begin(), lengths.end(), std::int64_t{0}));
  const double max = static_cast<double>(*std::max_element(lengths.begin(), lengths.end()));
  const double e = kElementBytes;
  // One int64 length from every peer.
  const double sizes_exchange = (w - 1) * 8;
  GatherCost c;
  c.useful_bytes = sum * e;
  switch (m) {
    case Method::kFloorAllgather:
    case Method::kFloorAllgatherv:
    case Method::kFloorAllgathervDirect: {
      const double per_rank = static_cast<double>(FloorCount(lengths));
      c.wire_bytes_per_rank = (w - 1) * per_rank * e;
      c.wasted_bytes = (w * per_rank - sum) * e;
      break;
    }
    case Method::kPadGatherTrim:
      c.wire_bytes_per_rank = sizes_exchange + (w - 1) * max * e;
      c.wasted_bytes = (w * max - sum) * e;
      break;
    case Method::kBoundedPad:
      // The bound here is the longest share (the tightest bound); each
      // block carries its length in one extra element.
      c.wire_bytes_per_rank = (w - 1) * (max + 1) * e;
      c.wasted_bytes = (w * max - sum) * e;
      break;
    case Method::kKnownCounts:
    case Method::kKnownCountsDirect:
      c.wire_bytes_per_rank = (w - 1) / w * sum * e;
      c.wasted_bytes = 0;
      break;
    case Method::kAllgatherv:
    case Method::kGroupedBroadcast:
    case Method::kGroupedSendRecv:
      // Rank r receives sum - len_r; the mean over ranks is (W-1)/W * sum.
      c.wire_bytes_per_rank = sizes_exchange + (w - 1) / w * sum * e;
      c.wasted_bytes = 0;
      break;
  }
  return c;
}

}  // namespace ddp::bench

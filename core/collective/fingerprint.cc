#include "core/collective/fingerprint.h"

#include <cstring>
#include <functional>
#include <map>
#include <sstream>

namespace ddp::comm {
namespace {

// Groups ranks by the value `key` gives them: "3 on ranks [0, 2]; 2 on rank [1]".
std::string GroupByValue(const std::vector<Fingerprint>& all,
                         const std::function<std::string(const Fingerprint&)>& key) {
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order;  // first appearance, so rank 0's value comes first
  for (size_t r = 0; r < all.size(); ++r) {
    const std::string k = key(all[r]);
    if (!groups.count(k)) order.push_back(k);
    groups[k].push_back(static_cast<int>(r));
  }
  std::ostringstream out;
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& ranks = groups[order[i]];
    out << (i ? "; " : "") << order[i] << " on rank" << (ranks.size() > 1 ? "s " : " ") << "[";
    for (size_t j = 0; j < ranks.size(); ++j) out << (j ? ", " : "") << ranks[j];
    out << "]";
  }
  return out.str();
}

std::string Header(const std::vector<Fingerprint>& all, const std::string& field) {
  return std::string("checked mode: ranks disagree on the ") + field + " of collective #" +
         std::to_string(all[0].seq) + " (" + Name(all[0].op) + " on rank 0): ";
}

std::string PerRankLines(const std::vector<Fingerprint>& all) {
  std::ostringstream out;
  for (size_t r = 0; r < all.size(); ++r) out << "\n  rank " << r << ": " << all[r].ToString();
  out << "\nThe engine was not called.";
  return out.str();
}

bool NeedsEqualCounts(OpKind op) {
  return op == OpKind::kAllgather || op == OpKind::kAllreduce || op == OpKind::kBroadcast ||
         op == OpKind::kReduceScatter;
}

}  // namespace

std::array<char, Fingerprint::kBytes> Fingerprint::Serialize() const {
  const int64_t words[8] = {static_cast<int64_t>(op),          static_cast<int64_t>(dtype),
                            seq,
                            static_cast<int64_t>(count),       root,
                            reduce,                            static_cast<int64_t>(counts_hash),
                            static_cast<int64_t>(engine_variant)};
  std::array<char, kBytes> out{};
  std::memcpy(out.data(), words, kBytes);
  return out;
}

Fingerprint Fingerprint::Deserialize(const char* bytes) {
  int64_t w[8];
  std::memcpy(w, bytes, kBytes);
  Fingerprint f;
  f.op = static_cast<OpKind>(w[0]);
  f.dtype = static_cast<DType>(w[1]);
  f.seq = w[2];
  f.count = static_cast<uint64_t>(w[3]);
  f.root = w[4];
  f.reduce = w[5];
  f.counts_hash = static_cast<uint64_t>(w[6]);
  f.engine_variant = static_cast<uint64_t>(w[7]);
  return f;
}

std::string Fingerprint::ToString() const {
  std::ostringstream out;
  out << Name(op) << " seq=" << seq;
  if (op != OpKind::kBarrier) out << " " << Name(dtype) << " count=" << count;
  if (root >= 0) out << " root=" << root;
  if (reduce >= 0) out << " op=" << Name(static_cast<ReduceOp>(reduce));
  return out.str();
}

uint64_t GlooAllgathervVariant(GlooAllgathervAlgorithm algorithm, std::size_t piece_bytes) {
  return static_cast<uint64_t>(piece_bytes) * 2 +
         (algorithm == GlooAllgathervAlgorithm::kDirect ? 1 : 0);
}

std::string GlooAllgathervVariantName(uint64_t variant) {
  if (variant == 0) return "no Gloo allgatherv settings";
  const auto algorithm =
      variant % 2 ? GlooAllgathervAlgorithm::kDirect : GlooAllgathervAlgorithm::kRing;
  const uint64_t piece = variant / 2;
  std::ostringstream out;
  out << Name(algorithm) << " in ";
  if (piece % 1024 == 0) {
    out << piece / 1024 << " KiB";
  } else {
    out << piece << " B";
  }
  out << " pieces";
  return out.str();
}

uint64_t HashCounts(std::span<const std::size_t> counts) {
  uint64_t h = 1469598103934665603ull;
  for (std::size_t c : counts) {
    for (int b = 0; b < 8; ++b) {
      h ^= (static_cast<uint64_t>(c) >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

std::optional<std::string> FindMismatch(const std::vector<Fingerprint>& all,
                                        std::span<const std::size_t> counts) {
  if (all.empty()) return std::nullopt;
  auto differs = [&](auto field) {
    for (const auto& f : all) {
      if (field(f) != field(all[0])) return true;
    }
    return false;
  };
  auto report = [&](const std::string& field, auto key) {
    return Header(all, field) + GroupByValue(all, key) + "." + PerRankLines(all);
  };
  if (differs([](const Fingerprint& f) { return f.op; })) {
    return report("operation", [](const Fingerprint& f) { return std::string(Name(f.op)); });
  }
  if (differs([](const Fingerprint& f) { return f.seq; })) {
    return report("sequence number",
                  [](const Fingerprint& f) { return "seq " + std::to_string(f.seq); });
  }
  const OpKind op = all[0].op;
  if (op == OpKind::kBarrier) return std::nullopt;
  if (differs([](const Fingerprint& f) { return f.dtype; })) {
    return report("dtype", [](const Fingerprint& f) { return std::string(Name(f.dtype)); });
  }
  if (NeedsEqualCounts(op) && differs([](const Fingerprint& f) { return f.count; })) {
    return report("count", [](const Fingerprint& f) { return "count " + std::to_string(f.count); });
  }
  if (differs([](const Fingerprint& f) { return f.root; })) {
    return report("root", [](const Fingerprint& f) { return "root " + std::to_string(f.root); });
  }
  if (differs([](const Fingerprint& f) { return f.reduce; })) {
    return report("reduction", [](const Fingerprint& f) {
      return std::string(Name(static_cast<ReduceOp>(f.reduce)));
    });
  }
  if (op == OpKind::kAllgatherv) {
    if (differs([](const Fingerprint& f) { return f.counts_hash; })) {
      return Header(all, "per-rank counts") +
             "the counts vectors passed differ between ranks (hashes: " +
             GroupByValue(all, [](const Fingerprint& f) { return std::to_string(f.counts_hash); }) +
             ")." + PerRankLines(all);
    }
    if (counts.size() != all.size()) {
      return Header(all, "per-rank counts") + "counts has " + std::to_string(counts.size()) +
             " entries for " + std::to_string(all.size()) + " ranks." + PerRankLines(all);
    }
    for (size_t r = 0; r < all.size(); ++r) {
      if (counts[r] != all[r].count) {
        return Header(all, "per-rank counts") + "counts[" + std::to_string(r) +
               "] = " + std::to_string(counts[r]) + " on every rank, but rank " +
               std::to_string(r) + " contributes " + std::to_string(all[r].count) + " elements." +
               PerRankLines(all);
      }
    }
  }
  // Last: the call itself agrees, but the engine would run it two ways (a
  // ring rank and a direct one, or different piece sizes, e.g. from
  // DDP_GLOO_ALLGATHERV_PIECE_KIB set on one host only), and the ranks would
  // wait for pieces that never come or Gloo would abort on an oversized one.
  if (differs([](const Fingerprint& f) { return f.engine_variant; })) {
    return report("Gloo allgatherv algorithm and piece size", [](const Fingerprint& f) {
      return GlooAllgathervVariantName(f.engine_variant);
    });
  }
  return std::nullopt;
}

}  // namespace ddp::comm

// Element types, reductions and collective kinds of the Comm API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace ddp::comm {

enum class DType : uint8_t { kFloat32 = 0, kFloat64 = 1, kInt32 = 2, kInt64 = 3 };
enum class ReduceOp : uint8_t { kSum = 0, kMax = 1, kMin = 2 };
enum class OpKind : uint8_t {
  kAllgather = 0,
  kAllgatherv = 1,
  kAllreduce = 2,
  kBroadcast = 3,
  kReduceScatter = 4,
  kBarrier = 5,
};

// How the Gloo backend runs an allgatherv (core/comm/gloo_allgatherv.h):
// Gloo's ring in pieces, or every rank sending its block straight to every
// peer.
enum class GlooAllgathervAlgorithm : uint8_t { kRing = 0, kDirect = 1 };
// Its default piece size (a setting: core/comm/options.h; gloo_allgatherv.h
// says why).
inline constexpr std::size_t kAllgathervPieceBytes = 512 * 1024;

std::size_t SizeOf(DType dtype);
const char* Name(DType dtype);     // "float32", ...
const char* Name(ReduceOp op);     // "sum", ...
const char* Name(OpKind op);       // "allreduce", ... (as torch.distributed names them)
const char* Name(GlooAllgathervAlgorithm a);  // "ring", "direct"

// The inverses of Name(): nullopt for a name that is not one of ours.
std::optional<DType> ParseDType(std::string_view name);
std::optional<ReduceOp> ParseReduceOp(std::string_view name);
std::optional<OpKind> ParseOpKind(std::string_view name);

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, float>) {
    return DType::kFloat32;
  } else if constexpr (std::is_same_v<T, double>) {
    return DType::kFloat64;
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return DType::kInt32;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return DType::kInt64;
  } else {
    static_assert(!sizeof(T), "Comm supports float, double, int32_t and int64_t");
  }
}

}  // namespace ddp::comm

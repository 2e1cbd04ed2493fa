#include "core/collective/types.h"

namespace ddp::comm {

std::size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
  }
  return 0;
}

const char* Name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
  }
  return "dtype?";
}

const char* Name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kMin: return "min";
  }
  return "reduce?";
}

const char* Name(OpKind op) {
  switch (op) {
    case OpKind::kAllgather: return "allgather";
    case OpKind::kAllgatherv: return "allgatherv";
    case OpKind::kAllreduce: return "allreduce";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kReduceScatter: return "reduce_scatter";
    case OpKind::kBarrier: return "barrier";
  }
  return "op?";
}

const char* Name(GlooAllgathervAlgorithm a) {
  switch (a) {
    case GlooAllgathervAlgorithm::kRing: return "ring";
    case GlooAllgathervAlgorithm::kDirect: return "direct";
  }
  return "?";
}

namespace {

// Finds the enumerator whose Name() is `name`, trying 0..last.
template <typename E>
std::optional<E> ParseByName(std::string_view name, E last) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    if (name == Name(static_cast<E>(i))) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

std::optional<DType> ParseDType(std::string_view name) {
  return ParseByName(name, DType::kInt64);
}
std::optional<ReduceOp> ParseReduceOp(std::string_view name) {
  return ParseByName(name, ReduceOp::kMin);
}
std::optional<OpKind> ParseOpKind(std::string_view name) {
  return ParseByName(name, OpKind::kBarrier);
}

}  // namespace ddp::comm

// Trainable parameters, non-trainable buffers, and the flat views that
// DDP-style communication needs.
//
// A layer owns its Parameter objects; Params() hands out a ParamList of named
// pointers in a fixed registration order (models prefix names, e.g.
// "fc1.weight"). Gradients *accumulate* (+=) in backward, as in PyTorch, so
// gradient accumulation across micro-batches works; call ZeroGrads before a
// fresh step. FlattenGrads / UnflattenGrads give the one-buffer view that
// gradient averaging uses: flatten, all-reduce, scale, write back.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/nn/tensor.h"

namespace ddp::nn {

template <typename S>
struct Parameter {
  Matrix<S> value;
  Matrix<S> grad;  // same shape as value

  Parameter() = default;
  Parameter(int rows, int cols) : value(Matrix<S>::Zero(rows, cols)), grad(Matrix<S>::Zero(rows, cols)) {}
  void ZeroGrad() { grad.setZero(value.rows(), value.cols()); }
};

template <typename S>
struct NamedParameter {
  std::string name;
  Parameter<S>* param;
};

template <typename S>
using ParamList = std::vector<NamedParameter<S>>;

// A named non-trainable tensor (BatchNorm running statistics).
template <typename S>
struct NamedBuffer {
  std::string name;
  Matrix<S>* value;
};

template <typename S>
using BufferList = std::vector<NamedBuffer<S>>;

// Appends `from` to `to`, each name prefixed with `prefix`.
template <typename List>
void AppendPrefixed(const List& from, const std::string& prefix, List* to) {
  for (auto entry : from) {
    entry.name = prefix + entry.name;
    to->push_back(entry);
  }
}

template <typename S>
int64_t NumElements(const ParamList<S>& params) {
  int64_t total = 0;
  for (const auto& p : params) total += p.param->value.size();
  return total;
}

template <typename S>
int64_t NumElements(const BufferList<S>& buffers) {
  int64_t total = 0;
  for (const auto& b : buffers) total += b.value->size();
  return total;
}

template <typename S>
void ZeroGrads(const ParamList<S>& params) {
  for (const auto& p : params) p.param->ZeroGrad();
}

namespace internal {

// Copies the matrices returned by `get(entry)` into one buffer, in list order.
template <typename S, typename List, typename Get>
Vector<S> Flatten(const List& list, Get get) {
  int64_t total = 0;
  for (const auto& e : list) total += get(e).size();
  Vector<S> flat(total);
  int64_t at = 0;
  for (const auto& e : list) {
    const Matrix<S>& m = get(e);
    flat.segment(at, m.size()) = Eigen::Map<const Vector<S>>(m.data(), m.size());
    at += m.size();
  }
  return flat;
}

template <typename S, typename List, typename Get>
void Unflatten(const Vector<S>& flat, const List& list, Get get, const char* what) {
  int64_t total = 0;
  for (const auto& e : list) total += get(e).size();
  if (flat.size() != total) {
    throw std::invalid_argument(std::string(what) + ": buffer has " + std::to_string(flat.size()) +
                                " elements, the list needs " + std::to_string(total));
  }
  int64_t at = 0;
  for (const auto& e : list) {
    Matrix<S>& m = get(e);
    Eigen::Map<Vector<S>>(m.data(), m.size()) = flat.segment(at, m.size());
    at += m.size();
  }
}

}  // namespace internal

template <typename S>
Vector<S> FlattenGrads(const ParamList<S>& params) {
  return internal::Flatten<S>(params, [](const NamedParameter<S>& p) -> Matrix<S>& { return p.param->grad; });
}

// Throws std::invalid_argument when `flat` has the wrong number of elements.
template <typename S>
void UnflattenGrads(const Vector<S>& flat, const ParamList<S>& params) {
  internal::Unflatten<S>(
      flat, params, [](const NamedParameter<S>& p) -> Matrix<S>& { return p.param->grad; }, "UnflattenGrads");
}

template <typename S>
Vector<S> FlattenValues(const ParamList<S>& params) {
  return internal::Flatten<S>(params, [](const NamedParameter<S>& p) -> Matrix<S>& { return p.param->value; });
}

template <typename S>
void UnflattenValues(const Vector<S>& flat, const ParamList<S>& params) {
  internal::Unflatten<S>(
      flat, params, [](const NamedParameter<S>& p) -> Matrix<S>& { return p.param->value; }, "UnflattenValues");
}

template <typename S>
Vector<S> FlattenBuffers(const BufferList<S>& buffers) {
  return internal::Flatten<S>(buffers, [](const NamedBuffer<S>& b) -> Matrix<S>& { return *b.value; });
}

template <typename S>
void UnflattenBuffers(const Vector<S>& flat, const BufferList<S>& buffers) {
  internal::Unflatten<S>(
      flat, buffers, [](const NamedBuffer<S>& b) -> Matrix<S>& { return *b.value; }, "UnflattenBuffers");
}

}  // namespace ddp::nn

// The per-element arithmetic of the BatchNorm and GroupNorm kernels, as
// __host__ __device__ functors: norm_kernels.cu launches them, and
// norm_emulation.h runs the very same functors on the host in the kernels'
// order, so a CPU test sees the kernels' exact float and double bits.
//
// Every multiply-add goes through the policy M (reduce.h): FusedMulAdd in the
// kernels. Pushes take (acc, segment, k) with k the element's index inside
// its segment; elementwise bodies take the flat NCHW index.
//
// No CUDA header: the host compiler builds this file for the CPU tests.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cuda/chunk.h"
#include "core/cuda/index_divider.h"
#include "core/cuda/reduce.h"

namespace ddp::cuda {

struct NchwShape {
  int64_t n = 0;
  int64_t c = 0;
  int64_t plane = 0;  // H * W
  int64_t Size() const { return n * c * plane; }
};

// The per-element divisions of a launch over this shape (index_divider.h):
// by the plane and by the channel count, every dividend below Size().
inline IndexDivider PlaneDivider(const NchwShape& s) { return IndexDivider::For(s.plane, s.Size()); }
inline IndexDivider ChannelDivider(const NchwShape& s) { return IndexDivider::For(s.c, s.Size()); }

// The reduction plans (reduce.h) of the kernels over this shape, which the
// emulation and the rounding bounds (norm_bounds.h) take from here too.
// Per channel over (N, plane): a chunk must lie in one plane.
template <typename T>
ReducePlan ChannelPlan(const NchwShape& s) {
  return PlanReduce(s.c, s.n * s.plane, ChunkWidth<T>(s.plane));
}
// Per (sample, group), a contiguous block of C / G planes.
template <typename T>
ReducePlan GroupPlan(const NchwShape& s, int64_t groups) {
  const int64_t len = s.c / groups * s.plane;
  return PlanReduce(s.n * groups, len, ChunkWidth<T>(len));
}

// The chunk width of the elementwise kernels over this shape: a chunk must
// lie in one plane (one channel), so V divides the plane (chunk.h).
template <typename T>
int ElementChunkWidth(const NchwShape& s) {
  return ChunkWidth<T>(s.plane);
}

namespace internal {

template <typename T>
DDP_HD T InvSqrt(T v) {
#if defined(__CUDA_ARCH__)
  return T(1) / sqrt(v);  // IEEE sqrt and division (nvcc's default -prec-*)
#else
  return T(1) / std::sqrt(v);
#endif
}

// Element k = n * plane + p of channel ch over (N, plane): its NCHW index.
DDP_HD inline int64_t ChannelElement(int64_t ch, int64_t k, int64_t c, const IndexDivider& plane) {
  const int64_t n = plane.Div(k);
  return (n * c + ch) * plane.d + (k - n * plane.d);
}

// The channel of NCHW index i: (i / plane) % c.
DDP_HD inline int64_t ChannelOf(int64_t i, const IndexDivider& c, const IndexDivider& plane) {
  return c.Mod(plane.Div(i));
}

// y = (x - mean) * invstd * gamma + beta over one chunk whose elements share
// their statistics and affine parameters (BatchNorm's and GroupNorm's y).
template <int V, typename M, typename T>
DDP_HD void NormalizeChunk(const T* x, T* y, T mean, T invstd, T gamma, T beta, bool vector) {
  const Chunk<T, V> xs = LoadChunk<V>(x, vector);
  Chunk<T, V> out;
  for (int e = 0; e < V; ++e) {
    const T xhat = (xs.v[e] - mean) * invstd;
    out.v[e] = M::Apply(xhat, gamma, beta);
  }
  StoreChunk<V>(y, out, vector);
}

// ---- BatchNorm: segment = channel, element k = (n, p) with k = n * plane + p ----

// A reduction's push: Load<V>(segment, k0) reads the chunk of elements k0 ..
// k0 + V - 1 of the segment (a Frag), Push<V> adds them to acc in element
// order. The kernels load two chunks before pushing either (launch.cuh); the
// emulation loads and pushes each in turn: the same values in the same
// order. With V > 1 a BatchNorm channel's chunk lies in one plane (V divides
// the plane), so its elements are contiguous from ChannelElement(ch, k0).
template <typename T, typename M>
struct ChannelWelfordPush {
  const T* x;
  int64_t c;
  IndexDivider plane;
  bool vector = false;  // x 16-byte aligned
  template <int V>
  using Frag = Chunk<T, V>;
  template <int V>
  DDP_HD Frag<V> Load(int64_t ch, int64_t k0) const {
    return LoadChunk<V>(x + ChannelElement(ch, k0, c, plane), vector);
  }
  template <int V>
  DDP_HD void Push(WelfordAcc<T, M>& acc, int64_t, const Frag<V>& f) const {
    for (int e = 0; e < V; ++e) acc.Push(f.v[e]);
  }
};

template <typename T, typename M>
struct WriteMeanM2 {
  T* mean;
  T* m2;
  DDP_HD void operator()(int64_t seg, const WelfordAcc<T, M>& acc) const {
    mean[seg] = acc.mean;
    m2[seg] = acc.m2;
  }
};

// (dy, dy * (x - mean)): the centred product is summed and multiplied by
// invstd once at the end (WriteCentredSums), as PyTorch's
// batch_norm_backward_reduce does with sum_dy_xmu, rather than rounding
// x-hat = (x - mean) * invstd in every term.
template <typename T, int V>
struct GradFrag {
  Chunk<T, V> dy, x;
  T centre;  // the mean the chunk's x is centred on
};

template <typename T, typename M>
struct ChannelGradPush {
  const T* dy;
  const T* x;
  const T* mean;
  int64_t c;
  IndexDivider plane;
  bool vector = false;  // dy and x 16-byte aligned
  template <int V>
  DDP_HD GradFrag<T, V> Load(int64_t ch, int64_t k0) const {
    const int64_t i = ChannelElement(ch, k0, c, plane);
    return {LoadChunk<V>(dy + i, vector), LoadChunk<V>(x + i, vector), mean[ch]};
  }
  template <int V>
  DDP_HD void Push(SumPairAcc<T, M>& acc, int64_t, const GradFrag<T, V>& f) const {
    for (int e = 0; e < V; ++e) acc.Push(f.dy.v[e], f.x.v[e] - f.centre, f.dy.v[e]);
  }
};

// a_out = a * scale, b_out = b * invstd[seg] * scale (scale: 1 for sums,
// 1 / length for means).
template <typename T, typename M>
struct WriteCentredSums {
  T* a_out;
  T* b_out;
  const T* invstd;
  T scale;
  DDP_HD void operator()(int64_t seg, const SumPairAcc<T, M>& acc) const {
    a_out[seg] = acc.a * scale;
    b_out[seg] = acc.b * invstd[seg] * scale;
  }
};

template <typename T, typename M>
struct Finalize {
  const T* mean;
  const T* m2;
  T count, eps, momentum;
  T* invstd;
  T* running_mean;
  T* running_var;
  DDP_HD void operator()(int64_t c) const {
    invstd[c] = InvSqrt(m2[c] / count + eps);
    if (running_mean != nullptr) {
      running_mean[c] = M::Apply(running_mean[c], T(1) - momentum, momentum * mean[c]);
      running_var[c] = M::Apply(running_var[c], T(1) - momentum, momentum * (m2[c] / (count - T(1))));
    }
  }
};

template <typename T>
struct InvstdFromVar {
  const T* var;
  T eps;
  T* invstd;
  DDP_HD void operator()(int64_t c) const { invstd[c] = InvSqrt(var[c] + eps); }
};

template <typename T, typename M>
struct Normalize {
  const T* x;
  const T* mean;
  const T* invstd;
  const T* gamma;
  const T* beta;
  T* y;
  IndexDivider c, plane;
  bool vector = false;  // x and y 16-byte aligned (chunk.h)
  // Elements i0 .. i0 + V - 1, one plane's: the channel and its values
  // once, then each element's arithmetic exactly as for V = 1.
  template <int V>
  DDP_HD void ChunkAt(int64_t i0) const {
    const int64_t ch = ChannelOf(i0, c, plane);
    NormalizeChunk<V, M>(x + i0, y + i0, mean[ch], invstd[ch], gamma[ch], beta[ch], vector);
  }
  DDP_HD void operator()(int64_t i) const { ChunkAt<1>(i); }
};

template <typename T, typename M>
struct InputGrad {
  const T* dy;
  const T* x;
  const T* mean;
  const T* invstd;
  const T* gamma;
  const T* sum_dy;
  const T* sum_dy_xhat;
  T count;
  T* dx;
  IndexDivider c, plane;
  bool vector = false;  // dy, x and dx 16-byte aligned
  // The two divisions by the count and gamma * invstd once per chunk (they
  // were per element: the same values, so the same bits).
  template <int V>
  DDP_HD void ChunkAt(int64_t i0) const {
    const int64_t ch = ChannelOf(i0, c, plane);
    const T m = mean[ch], inv = invstd[ch];
    const T mean_dy = sum_dy[ch] / count;
    const T mean_dy_xhat = sum_dy_xhat[ch] / count;
    const T scale = gamma[ch] * inv;
    const Chunk<T, V> dys = LoadChunk<V>(dy + i0, vector), xs = LoadChunk<V>(x + i0, vector);
    Chunk<T, V> out;
    for (int e = 0; e < V; ++e) {
      const T xhat = (xs.v[e] - m) * inv;
      out.v[e] = M::Apply(-xhat, mean_dy_xhat, dys.v[e] - mean_dy) * scale;
    }
    StoreChunk<V>(dx + i0, out, vector);
  }
  DDP_HD void operator()(int64_t i) const { ChunkAt<1>(i); }
};

// ---- GroupNorm: group ng = n * G + g is the contiguous block [ng * len, (ng + 1) * len) ----

template <typename T, typename M>
struct GroupWelfordPush {
  const T* x;
  int64_t len;
  bool vector = false;  // x 16-byte aligned
  template <int V>
  using Frag = Chunk<T, V>;
  template <int V>
  DDP_HD Frag<V> Load(int64_t ng, int64_t k0) const {
    return LoadChunk<V>(x + ng * len + k0, vector);
  }
  template <int V>
  DDP_HD void Push(WelfordAcc<T, M>& acc, int64_t, const Frag<V>& f) const {
    for (int e = 0; e < V; ++e) acc.Push(f.v[e]);
  }
};

template <typename T, typename M>
struct WriteGroupStats {
  T* mean;
  T* invstd;
  T len, eps;
  DDP_HD void operator()(int64_t ng, const WelfordAcc<T, M>& acc) const {
    mean[ng] = acc.mean;
    invstd[ng] = InvSqrt(acc.m2 / len + eps);
  }
};

template <typename T, typename M>
struct GroupNormalize {
  const T* x;
  const T* mean;
  const T* invstd;
  const T* gamma;
  const T* beta;
  T* y;
  IndexDivider c, plane, len;
  bool vector = false;  // x and y 16-byte aligned
  // A chunk lies in one plane, so in one channel and one group.
  template <int V>
  DDP_HD void ChunkAt(int64_t i0) const {
    const int64_t ch = ChannelOf(i0, c, plane);
    const int64_t ng = len.Div(i0);
    NormalizeChunk<V, M>(x + i0, y + i0, mean[ng], invstd[ng], gamma[ch], beta[ch], vector);
  }
  DDP_HD void operator()(int64_t i) const { ChunkAt<1>(i); }
};

// Per group: (dxhat, dxhat * (x - mean)), dxhat = dy * gamma[c]; invstd is
// the group's own, so it multiplies the sum once (WriteCentredSums).
template <typename T, typename M>
struct GroupGradPush {
  const T* dy;
  const T* x;
  const T* mean;
  const T* gamma;
  int64_t groups, channels_per_group;
  IndexDivider plane;
  int64_t len;
  bool vector = false;  // dy and x 16-byte aligned
  // V divides the group's length, not always the plane: a chunk may cross
  // planes, so each element finds its own channel's gamma.
  template <int V>
  struct Frag {
    Chunk<T, V> dy, x;
    T gamma[V];
    T centre;
  };
  template <int V>
  DDP_HD Frag<V> Load(int64_t ng, int64_t k0) const {
    const int64_t i = ng * len + k0;
    Frag<V> f{LoadChunk<V>(dy + i, vector), LoadChunk<V>(x + i, vector), {}, mean[ng]};
    for (int e = 0; e < V; ++e) f.gamma[e] = gamma[(ng % groups) * channels_per_group + plane.Div(k0 + e)];
    return f;
  }
  template <int V>
  DDP_HD void Push(SumPairAcc<T, M>& acc, int64_t, const Frag<V>& f) const {
    for (int e = 0; e < V; ++e) {
      const T d = f.dy.v[e] * f.gamma[e];
      acc.Push(d, f.x.v[e] - f.centre, d);
    }
  }
};

// Per channel over (n, plane): (dy, dy * xhat) -> dbeta, dgamma. x-hat is
// formed per term here: its invstd changes with the sample.
template <typename T, typename M>
struct GroupParamGradPush {
  const T* dy;
  const T* x;
  const T* mean;
  const T* invstd;
  int64_t c, groups, channels_per_group;
  IndexDivider plane;
  bool vector = false;  // dy and x 16-byte aligned
  struct Stats {
    T centre, scale;  // the group's mean and invstd
  };
  template <int V>
  struct Frag {
    Chunk<T, V> dy, x;
    Stats g;
  };
  // The chunk lies in one plane (V divides it): one sample, one group.
  template <int V>
  DDP_HD Frag<V> Load(int64_t ch, int64_t k0) const {
    const int64_t i = ChannelElement(ch, k0, c, plane);
    const int64_t ng = plane.Div(k0) * groups + ch / channels_per_group;
    return {LoadChunk<V>(dy + i, vector), LoadChunk<V>(x + i, vector), {mean[ng], invstd[ng]}};
  }
  template <int V>
  DDP_HD void Push(SumPairAcc<T, M>& acc, int64_t, const Frag<V>& f) const {
    for (int e = 0; e < V; ++e) {
      const T xhat = (f.x.v[e] - f.g.centre) * f.g.scale;
      acc.Push(f.dy.v[e], xhat, f.dy.v[e]);
    }
  }
};

template <typename T, typename M>
struct WriteSumPair {
  T* a_out;
  T* b_out;
  DDP_HD void operator()(int64_t seg, const SumPairAcc<T, M>& acc) const {
    a_out[seg] = acc.a;
    b_out[seg] = acc.b;
  }
};

template <typename T, typename M>
struct GroupInputGrad {
  const T* dy;
  const T* x;
  const T* mean;
  const T* invstd;
  const T* gamma;
  const T* mean_d;
  const T* mean_d_xhat;
  T* dx;
  IndexDivider c, plane, len;
  bool vector = false;  // dy, x and dx 16-byte aligned
  template <int V>
  DDP_HD void ChunkAt(int64_t i0) const {
    const int64_t ch = ChannelOf(i0, c, plane);
    const int64_t ng = len.Div(i0);
    const T m = mean[ng], inv = invstd[ng], g = gamma[ch], md = mean_d[ng], mdx = mean_d_xhat[ng];
    const Chunk<T, V> dys = LoadChunk<V>(dy + i0, vector), xs = LoadChunk<V>(x + i0, vector);
    Chunk<T, V> out;
    for (int e = 0; e < V; ++e) {
      const T xhat = (xs.v[e] - m) * inv;
      out.v[e] = M::Apply(-xhat, mdx, M::Apply(dys.v[e], g, -md)) * inv;
    }
    StoreChunk<V>(dx + i0, out, vector);
  }
  DDP_HD void operator()(int64_t i) const { ChunkAt<1>(i); }
};

}  // namespace internal
}  // namespace ddp::cuda

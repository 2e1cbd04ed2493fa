#include "bench/norm_kernels/traffic.h"

#include <algorithm>
#include <limits>
#include <set>

namespace ddp::bench::norm_kernels {
namespace {

// The arrays the kernels touch, by what their size is: a tensor (N*C*H*W),
// a per-channel vector (C) or a per-(sample, group) vector (N*G).
enum class Array {
  // tensors
  kX, kDy, kY, kDx,
  // per channel
  kLocalMean, kLocalM2, kMean, kM2, kInvstd, kGamma, kBeta, kRunningMean, kRunningVar, kSumDy, kSumDyXhat,
  kDgamma, kDbeta,
  // per (sample, group)
  kGroupMean, kGroupInvstd, kGroupMeanD, kGroupMeanDXhat,
};

int64_t Elements(Array a, const Shape& s) {
  if (a <= Array::kDx) return s.elements();
  if (a <= Array::kDbeta) return s.c;
  return s.n * GroupsFor(s.c);
}

struct ArrayPass {
  const char* kernel;
  std::vector<Array> read, written;
};

using A = Array;

// Each kernel's passes, read from core/cuda/norm_kernels.cu and the bodies
// of norm_bodies.h they launch.
std::vector<ArrayPass> KernelPasses(Row r, bool sync) {
  // SyncBatchNorm's sequence: the local statistics go through BnMergeStats
  // (one rank here) into the arrays the rest reads; local BN's statistics
  // are read as they are.
  const A stats_mean = sync ? A::kLocalMean : A::kMean, stats_m2 = sync ? A::kLocalM2 : A::kM2;
  switch (r) {
    case Row::kBnStats: return {{"BnLocalStats", {A::kX}, {stats_mean, stats_m2}}};
    case Row::kBnFinalize:
      return {{"BnFinalizeStats", {A::kMean, A::kM2, A::kRunningMean, A::kRunningVar},
               {A::kInvstd, A::kRunningMean, A::kRunningVar}}};
    case Row::kBnNormalize:
      return {{"BnNormalize", {A::kX, A::kMean, A::kInvstd, A::kGamma, A::kBeta}, {A::kY}}};
    case Row::kBnGradSums:
      return {{"BnLocalGradSums", {A::kDy, A::kX, A::kMean, A::kInvstd}, {A::kSumDy, A::kSumDyXhat}}};
    case Row::kBnInputGrad:
      return {{"BnInputGrad", {A::kDy, A::kX, A::kMean, A::kInvstd, A::kGamma, A::kSumDy, A::kSumDyXhat},
               {A::kDx}}};
    case Row::kGnForward:
      return {{"GnForward: statistics", {A::kX}, {A::kGroupMean, A::kGroupInvstd}},
              {"GnForward: normalize", {A::kX, A::kGroupMean, A::kGroupInvstd, A::kGamma, A::kBeta}, {A::kY}}};
    case Row::kGnBackward:
      return {{"GnBackward: dgamma, dbeta", {A::kDy, A::kX, A::kGroupMean, A::kGroupInvstd}, {A::kDgamma, A::kDbeta}},
              {"GnBackward: group sums", {A::kDy, A::kX, A::kGroupMean, A::kGamma, A::kGroupInvstd},
               {A::kGroupMeanD, A::kGroupMeanDXhat}},
              {"GnBackward: input grad",
               {A::kDy, A::kX, A::kGroupMean, A::kGroupInvstd, A::kGamma, A::kGroupMeanD, A::kGroupMeanDXhat},
               {A::kDx}}};
    default: break;
  }
  std::vector<Row> parts;
  if (r == Row::kGnFwdBwd) parts = {Row::kGnForward, Row::kGnBackward};
  if (r == Row::kBnFwdBwd || r == Row::kSyncBnFwdBwd) {
    parts = {Row::kBnStats, Row::kBnFinalize, Row::kBnNormalize, Row::kBnGradSums, Row::kBnInputGrad};
  }
  std::vector<ArrayPass> out;
  for (Row p : parts) {
    for (ArrayPass& pass : KernelPasses(p, sync)) out.push_back(std::move(pass));
    if (p == Row::kBnStats && sync) {
      out.push_back({"BnMergeStats (one rank)", {A::kLocalMean, A::kLocalM2}, {A::kMean, A::kM2}});
    }
  }
  return out;
}

int64_t Sum(const std::vector<Array>& arrays, const Shape& s) {
  int64_t total = 0;
  for (Array a : arrays) total += Elements(a, s);
  return total;
}

}  // namespace

int64_t GroupsFor(int64_t c) { return std::min<int64_t>(32, std::max<int64_t>(1, c / 2)); }

std::string ShapeName(const Shape& s) {
  return "N:" + std::to_string(s.n) + "/C:" + std::to_string(s.c) + "/HW:" + std::to_string(s.h) + "x" +
         std::to_string(s.w);
}

std::optional<std::vector<Shape>> ParseShapes(const std::string& text, std::string* error) {
  std::vector<Shape> out;
  std::string item;
  auto fail = [&](const std::string& why) {
    *error = "bad shape '" + item + "' in --shapes: " + why +
             " (allowed: a comma-separated list of NxCxHxW, e.g. 32x64x56x56)";
    return std::nullopt;
  };
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    item = text.substr(start, comma - start);
    start = comma + 1;
    int64_t v[4] = {0, 0, 0, 0};
    std::size_t pos = 0;
    for (int k = 0; k < 4; ++k) {
      std::size_t used = 0;
      const std::string rest = item.substr(pos);
      if (rest.empty() || rest[0] < '0' || rest[0] > '9') return fail("need four positive integers");
      try {
        v[k] = std::stoll(rest, &used);
      } catch (const std::exception&) {
        return fail("a number out of range");
      }
      pos += used;
      if (k < 3 && (pos >= item.size() || item[pos] != 'x')) return fail("need four positive integers");
      if (k < 3) ++pos;
    }
    if (pos != item.size()) return fail("trailing characters");
    const Shape s{v[0], v[1], v[2], v[3]};
    if (s.n < 1 || s.c < 1 || s.h < 1 || s.w < 1) return fail("every dimension must be >= 1");
    if (static_cast<double>(s.n) * static_cast<double>(s.c) * static_cast<double>(s.h) *
            static_cast<double>(s.w) > std::numeric_limits<int32_t>::max()) {
      return fail("more than 2^31 elements");
    }
    if (s.n * s.plane() < 2) return fail("BatchNorm's training statistics need N * H * W >= 2");
    if (s.c % GroupsFor(s.c) != 0) {
      return fail("GroupNorm's groups min(32, max(1, C / 2)) = " + std::to_string(GroupsFor(s.c)) +
                  " do not divide C");
    }
    out.push_back(s);
  }
  return out;
}

const char* RowName(Row r) {
  switch (r) {
    case Row::kBnStats: return "bn_stats";
    case Row::kBnFinalize: return "bn_finalize";
    case Row::kBnNormalize: return "bn_normalize";
    case Row::kBnGradSums: return "bn_grad_sums";
    case Row::kBnInputGrad: return "bn_input_grad";
    case Row::kGnForward: return "gn_forward";
    case Row::kGnBackward: return "gn_backward";
    case Row::kBnFwdBwd: return "bn_fwd_bwd";
    case Row::kSyncBnFwdBwd: return "sync_bn_fwd_bwd";
    case Row::kGnFwdBwd: return "gn_fwd_bwd";
  }
  return "?";
}

std::optional<Row> ParseRow(const std::string& name) {
  for (Row r : kAllRows) {
    if (name == RowName(r)) return r;
  }
  return std::nullopt;
}

std::vector<Pass> Passes(Row r, const Shape& s) {
  std::vector<Pass> out;
  for (const ArrayPass& p : KernelPasses(r, r == Row::kSyncBnFwdBwd)) {
    out.push_back({p.kernel, Sum(p.read, s), Sum(p.written, s)});
  }
  return out;
}

Traffic RowTraffic(Row r, const Shape& s, int64_t element_size) {
  Traffic t;
  std::set<Array> touched;
  for (const ArrayPass& p : KernelPasses(r, r == Row::kSyncBnFwdBwd)) {
    t.read += Sum(p.read, s) * element_size;
    t.written += Sum(p.written, s) * element_size;
    touched.insert(p.read.begin(), p.read.end());
    touched.insert(p.written.begin(), p.written.end());
  }
  for (Array a : touched) t.footprint += Elements(a, s) * element_size;
  return t;
}

}  // namespace ddp::bench::norm_kernels

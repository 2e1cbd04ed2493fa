// bench/norm_kernels: the W = 1 device rows. On one GPU, each norm kernel of
// core/cuda/norm_kernels.h and the training steps made of them, on
// device-resident buffers, timed with CUDA events, against a
// cudaMemcpyAsync device-to-device copy that moves the same bytes, measured
// in the same run: per row the bytes its kernels must move (traffic.h), the
// GB/s that gives, and the fraction of the copy's GB/s (the goal: >= 0.8
// where the data cannot sit in L2).
//
// Method (the project's: bench/README.md): per shape and dtype, the rows run
// in interleaved repetitions (--reps; every row of a shape, then again);
// one repetition of a row is --batches timed batches of back-to-back calls
// (batch_timer.h), each paired with a batch of the copy (the order of the
// two alternates), after one untimed batch of each; the repetition's number
// is the median batch's time per call, and its fraction of the copy is
// taken within the repetition. The summary and bench/peers/norm_gpu_table.py
// give the median over repetitions with the min and max.
//
// One process, one GPU, no collectives: nothing here is shared between
// ranks. Without a GPU: one line saying so, exit 2 (the refusal
// tools/bundle/run_all.sh reads as a skip).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "bench/benchmark_flags.h"
#include "bench/common/report.h"
#include "bench/norm_kernels/batch_timer.h"
#include "bench/norm_kernels/device_rows.h"
#include "bench/norm_kernels/traffic.h"
#include "core/cli/flags.h"
#include "core/cuda/check.h"
#include "core/cuda/device_buffer.h"

namespace ddp::bench::norm_kernels {
namespace {

constexpr const char* kProgram = "norm_kernels";
// bench/sync_bn's shapes (C 16..1024, N 2..32, 8x8), then two ResNet
// stage-1 shapes whose tensors (25.7 and 103 MB in float) are as large as
// and larger than an H100's 50 MB L2.
constexpr const char* kDefaultShapes =
    "2x16x8x8,8x16x8x8,32x16x8x8,2x64x8x8,8x64x8x8,32x64x8x8,2x256x8x8,8x256x8x8,32x256x8x8,"
    "2x1024x8x8,8x1024x8x8,32x1024x8x8,32x64x56x56,32x256x56x56";
constexpr double kGoal = 0.8;  // issue 43: a kernel's GB/s at least 0.8 of the copy's

struct Settings {
  std::string shapes = kDefaultShapes;
  std::string dtypes = "float,double";
  std::string rows = "all";
  int reps = 5;
  int batches = 10;
  double batch_us = 300;
  int device = 0;
};

struct Selection {
  std::vector<Shape> shapes;
  std::vector<std::string> dtypes;
  std::vector<Row> rows;
};

int64_t ElementSize(const std::string& dtype) { return dtype == "double" ? 8 : 4; }

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The flags' lists, or "" and the error naming the flag.
std::string Select(const Settings& s, Selection* out) {
  std::string error;
  const auto shapes = ParseShapes(s.shapes, &error);
  if (!shapes) return error;
  out->shapes = *shapes;
  for (const std::string& d : Split(s.dtypes)) {
    if (d != "float" && d != "double") {
      return "bad value '" + d + "' in --dtypes (allowed: float, double, comma-separated)";
    }
    out->dtypes.push_back(d);
  }
  if (s.rows == "all") {
    out->rows.assign(std::begin(kAllRows), std::end(kAllRows));
    return "";
  }
  for (const std::string& r : Split(s.rows)) {
    const auto row = ParseRow(r);
    if (!row) {
      std::string allowed;
      for (Row k : kAllRows) allowed += std::string(allowed.empty() ? "" : ", ") + RowName(k);
      return "bad value '" + r + "' in --rows (allowed: all, or a comma-separated list of " + allowed + ")";
    }
    out->rows.push_back(*row);
  }
  return "";
}

std::string BenchName(const std::string& dtype, Row r, const Shape& s, int rep) {
  return std::string(kProgram) + "/" + dtype + "/" + RowName(r) + "/" + ShapeName(s) + "/rep:" + std::to_string(rep);
}

// (shape index, dtype, row): the run's rows, in registration order.
using Key = std::tuple<std::size_t, std::string, Row>;

struct RepResult {
  double kernel_us = 0, copy_us = 0;
};

struct Run {
  cudaStream_t stream = nullptr;
  std::unique_ptr<BatchTimer> timer;
  std::optional<cuda::DeviceBuffer<unsigned char>> copy_src, copy_dst;
  int64_t l2_bytes = 0;
  double batch_s = 0;
  std::map<std::pair<std::size_t, std::string>, std::unique_ptr<DeviceRows>> rows;  // made at first use
  std::map<Key, std::pair<int64_t, int64_t>> calls;                                 // kernel, copy per batch
  std::map<Key, std::vector<RepResult>> results;
  int failures = 0;
};

void TimeRow(benchmark::State& state, Run& run, const Selection& sel, const Key& key, int rep) {
  const auto& [shape_index, dtype, row] = key;
  const Shape& shape = sel.shapes[shape_index];
  const Traffic traffic = RowTraffic(row, shape, ElementSize(dtype));
  // The copy moves the row's bytes: it reads half and writes half.
  const int64_t copy_bytes = std::max<int64_t>(1, traffic.bytes() / 2);
  std::unique_ptr<DeviceRows>& rows = run.rows[{shape_index, dtype}];
  if (!rows) rows = MakeDeviceRows(shape, dtype, run.stream);
  DeviceRows* device_rows = rows.get();
  const auto kernel = [device_rows, row] { device_rows->Enqueue(row); };
  const auto copy = [&run, copy_bytes] {
    DDP_CUDA_CHECK(cudaMemcpyAsync(run.copy_dst->get(), run.copy_src->get(), static_cast<std::size_t>(copy_bytes),
                                   cudaMemcpyDeviceToDevice, run.stream));
  };
  auto& [calls, copy_calls] = run.calls[key];
  if (calls == 0) {
    calls = run.timer->CallsFor(kernel, run.batch_s, 100000);
    copy_calls = run.timer->CallsFor(copy, run.batch_s, 100000);
  }
  run.timer->PerCall(kernel, calls);  // untimed: whatever ran before leaves the GPU
  run.timer->PerCall(copy, copy_calls);
  std::vector<double> kernel_s, copy_s;
  for (auto _ : state) {
    const bool kernel_first = kernel_s.size() % 2 == 0;
    double k = 0, c = 0;
    if (kernel_first) k = run.timer->PerCall(kernel, calls);
    c = run.timer->PerCall(copy, copy_calls);
    if (!kernel_first) k = run.timer->PerCall(kernel, calls);
    state.SetIterationTime(k);
    kernel_s.push_back(k);
    copy_s.push_back(c);
  }
  const RepResult r{1e6 * Median(kernel_s), 1e6 * Median(copy_s)};
  run.results[key].push_back(r);
  const double gbps = static_cast<double>(traffic.bytes()) / r.kernel_us / 1e3;
  const double copy_gbps = 2.0 * static_cast<double>(copy_bytes) / r.copy_us / 1e3;
  state.counters["W"] = 1;
  state.counters["rep"] = rep;
  state.counters["median_us"] = r.kernel_us;
  state.counters["copy_us"] = r.copy_us;
  state.counters["bytes"] = static_cast<double>(traffic.bytes());
  state.counters["bytes_read"] = static_cast<double>(traffic.read);
  state.counters["bytes_written"] = static_cast<double>(traffic.written);
  state.counters["footprint_bytes"] = static_cast<double>(traffic.footprint);
  state.counters["copy_bytes"] = static_cast<double>(copy_bytes);
  state.counters["gbps"] = gbps;
  state.counters["copy_gbps"] = copy_gbps;
  state.counters["frac_of_copy"] = gbps / copy_gbps;
  state.counters["fits_l2"] = traffic.footprint <= run.l2_bytes ? 1 : 0;
  state.counters["groups"] = static_cast<double>(GroupsFor(shape.c));
  state.counters["calls_per_batch"] = static_cast<double>(calls);
  state.counters["copy_calls_per_batch"] = static_cast<double>(copy_calls);
}

std::string Spread(std::vector<double> v, const char* fmt) {
  char a[32], b[32], c[32];
  std::snprintf(a, sizeof(a), fmt, Median(v));
  std::snprintf(b, sizeof(b), fmt, *std::min_element(v.begin(), v.end()));
  std::snprintf(c, sizeof(c), fmt, *std::max_element(v.begin(), v.end()));
  return std::string(a) + " [" + b + ", " + c + "]";
}

// Per row: median [min, max] over the repetitions; then the goal's tally
// over the rows whose data cannot all sit in L2.
void PrintSummary(const Run& run, const Selection& sel, const Settings& s) {
  std::printf("\nsummary (W = 1, one GPU; %d interleaved repetitions of %d batches; median [min, max] over the "
              "repetitions): time per call, GB/s from the bytes the row's kernels must move, and that over a "
              "device-to-device copy of the same bytes in the same repetition (goal >= %.1f)\n",
              s.reps, s.batches, kGoal);
  std::printf("%-6s %-16s %-22s %14s %26s %9s %9s %22s %s\n", "dtype", "row", "shape", "bytes", "time (us)", "GB/s",
              "copy GB/s", "fraction of copy", "");
  int big = 0, met = 0;
  double worst = std::numeric_limits<double>::infinity();
  std::string worst_row;
  for (std::size_t i = 0; i < sel.shapes.size(); ++i) {
    for (const std::string& dtype : sel.dtypes) {
      for (Row row : sel.rows) {
        const auto it = run.results.find(Key{i, dtype, row});
        if (it == run.results.end() || it->second.empty()) continue;
        const Traffic t = RowTraffic(row, sel.shapes[i], ElementSize(dtype));
        std::vector<double> us, gbps, copy_gbps, frac;
        for (const RepResult& r : it->second) {
          us.push_back(r.kernel_us);
          gbps.push_back(static_cast<double>(t.bytes()) / r.kernel_us / 1e3);
          copy_gbps.push_back(2.0 * static_cast<double>(std::max<int64_t>(1, t.bytes() / 2)) / r.copy_us / 1e3);
          frac.push_back(gbps.back() / copy_gbps.back());
        }
        const bool fits = t.footprint <= run.l2_bytes;
        std::printf("%-6s %-16s %-22s %14lld %26s %9.1f %9.1f %22s %s\n", dtype.c_str(), RowName(row),
                    ShapeName(sel.shapes[i]).c_str(), static_cast<long long>(t.bytes()),
                    Spread(us, "%.2f").c_str(), Median(gbps), Median(copy_gbps), Spread(frac, "%.2f").c_str(),
                    fits ? "(fits in L2)" : "");
        if (!fits) {
          ++big;
          if (Median(frac) >= kGoal) ++met;
          if (Median(frac) < worst) {
            worst = Median(frac);
            worst_row = dtype + " " + RowName(row) + " " + ShapeName(sel.shapes[i]);
          }
        }
      }
    }
  }
  if (big == 0) {
    std::printf("no row's data exceeds the L2 (%lld bytes): no row here tests the goal\n",
                static_cast<long long>(run.l2_bytes));
  } else {
    std::printf("rows whose data exceeds the L2 (%lld bytes): %d; fraction of copy >= %.1f in %d; worst %.2f (%s)\n",
                static_cast<long long>(run.l2_bytes), big, kGoal, met, worst, worst_row.c_str());
  }
}

int Main(int argc, char** argv) {
  BenchmarkFlags bf;
  // Repetitions are --reps (interleaved, summarised here): Google
  // Benchmark's own would repeat a row back to back.
  std::vector<std::string> allowed;
  for (const std::string& f : CommonBenchmarkFlags()) {
    if (f.find("repetitions") == std::string::npos && f.find("aggregates") == std::string::npos) allowed.push_back(f);
  }
  if (const std::string err = ParseBenchmarkFlags(argc, argv, allowed, &bf); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
    return 2;
  }
  Settings s;
  cli::Flags flags(kProgram,
                   "The W = 1 device rows: each norm kernel of core/cuda/norm_kernels.h and the BatchNorm /\n"
                   "SyncBatchNorm / GroupNorm training steps made of them, on one GPU, timed with CUDA events,\n"
                   "with the bytes they must move, GB/s, and the fraction of a device-to-device copy's GB/s\n"
                   "measured in the same run. Needs a GPU (without one: exit 2, one line).\n"
                   "--benchmark_* flags (format, out, filter) are passed to Google Benchmark.");
  flags.String("shapes", &s.shapes, "NxCxHxW,... (GroupNorm: min(32, max(1, C/2)) groups)");
  flags.String("dtypes", &s.dtypes, "float, double, or both comma-separated");
  flags.String("rows", &s.rows, "all, or a comma-separated list of row names (bench/norm_kernels/README.md)");
  flags.Int("reps", &s.reps, "interleaved repetitions of every row (the summary: median, min, max)", 1, 100);
  flags.Int("batches", &s.batches, "timed batches per repetition, each paired with a batch of the copy", 1, 1000);
  flags.Double("batch_us", &s.batch_us, "target length of one batch of back-to-back calls, microseconds", 10, 1e6);
  flags.Int("device", &s.device, "CUDA device index", 0, 1023);
  flags.ParseOrExit(static_cast<int>(bf.ours.size()), bf.ours.data());
  Selection sel;
  if (const std::string err = Select(s, &sel); !err.empty()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, err.c_str());
    return 2;
  }
  std::vector<std::string> names;
  std::vector<std::pair<Key, int>> selected;
  for (std::size_t i = 0; i < sel.shapes.size(); ++i) {
    for (const std::string& dtype : sel.dtypes) {
      for (int rep = 0; rep < s.reps; ++rep) {
        for (Row row : sel.rows) {
          names.push_back(BenchName(dtype, row, sel.shapes[i], rep));
          if (FilterSelects(bf.filter, names.back())) selected.push_back({Key{i, dtype, row}, rep});
        }
      }
    }
  }
  if (selected.empty()) {
    std::fprintf(stderr, "%s: --benchmark_filter='%s' selects none of this run's %zu benchmarks (e.g. %s)\n",
                 kProgram, bf.filter.c_str(), names.size(), names.front().c_str());
    return 2;
  }
  if (bf.list_tests) {
    for (const auto& [key, rep] : selected) {
      std::printf("%s\n", BenchName(std::get<1>(key), std::get<2>(key), sel.shapes[std::get<0>(key)], rep).c_str());
    }
    return 0;
  }

  int count = 0;
  const cudaError_t probe = cudaGetDeviceCount(&count);
  if (probe != cudaSuccess || count == 0) {
    // The wording tools/bundle/run_all.sh's gpu_refusal recognises.
    const std::string why =
        probe != cudaSuccess ? std::string("cudaGetDeviceCount: ") + cudaGetErrorString(probe) : "0 devices";
    std::fprintf(stderr,
                 "%s: backend 'nccl' needs a GPU (the W = 1 kernel rows run on one), none is usable here (%s)\n",
                 kProgram, why.c_str());
    return 2;
  }
  if (s.device >= count) {
    std::fprintf(stderr, "%s: --device %d: only %d device(s) visible (allowed: 0..%d)\n", kProgram, s.device, count,
                 count - 1);
    return 2;
  }
#ifndef __OPTIMIZE__
  std::fprintf(stderr, "%s: warning: host code built without optimization (Bazel's default fastbuild); the "
               "kernels are nvcc -O3 either way, numbers to cite come from `bazel run -c opt //bench/norm_kernels`\n",
               kProgram);
#endif

  Run run;
  DDP_CUDA_CHECK(cudaSetDevice(s.device));
  cudaDeviceProp prop{};
  DDP_CUDA_CHECK(cudaGetDeviceProperties(&prop, s.device));
  int l2 = 0, sms = 0, mps = 0;
  DDP_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, s.device));
  DDP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, s.device));
  if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, s.device) != cudaSuccess) mps = 0;
  run.l2_bytes = l2;
  run.batch_s = s.batch_us * 1e-6;
  // The reductions take their block partials from the stream-ordered pool
  // (core/cuda/launch.cuh); with the default release threshold of 0 every
  // batch's synchronisation would hand the pool back to the driver and the
  // next call map it again. Kept, as PyTorch's caching allocator keeps its
  // blocks.
  cudaMemPool_t pool = nullptr;
  DDP_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, s.device));
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  DDP_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  DDP_CUDA_CHECK(cudaStreamCreateWithFlags(&run.stream, cudaStreamNonBlocking));
  run.timer = std::make_unique<BatchTimer>(run.stream);
  int64_t copy_max = 1;
  for (const auto& [key, rep] : selected) {
    const Traffic t = RowTraffic(std::get<2>(key), sel.shapes[std::get<0>(key)], ElementSize(std::get<1>(key)));
    copy_max = std::max(copy_max, t.bytes() / 2);
  }
  run.copy_src.emplace(static_cast<std::size_t>(copy_max));
  run.copy_dst.emplace(static_cast<std::size_t>(copy_max));
  DDP_CUDA_CHECK(cudaMemset(run.copy_src->get(), 0x3C, static_cast<std::size_t>(copy_max)));
  DDP_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<char*> gb_args = {argv[0]};
  for (std::string& a : bf.args) gb_args.push_back(a.data());
  int gb_argc = static_cast<int>(gb_args.size());
  gb_args.push_back(nullptr);
  benchmark::Initialize(&gb_argc, gb_args.data());
  for (const auto& [key, rep] : selected) {
    const Key k = key;
    const int r = rep;
    const std::string name = BenchName(std::get<1>(k), std::get<2>(k), sel.shapes[std::get<0>(k)], r);
    benchmark::RegisterBenchmark(name.c_str(), [&run, &sel, k, r](benchmark::State& state) {
      try {
        TimeRow(state, run, sel, k, r);
      } catch (const std::exception& e) {
        ++run.failures;
        state.SkipWithError(e.what());
      }
    })->Iterations(s.batches)->UseManualTime()->Unit(benchmark::kMicrosecond);
  }
  AddRunContext(1);
  benchmark::AddCustomContext("ddp_tool", "bench/norm_kernels");
  benchmark::AddCustomContext("ddp_world_size", "1");
  benchmark::AddCustomContext("ddp_reps", std::to_string(s.reps));
  benchmark::AddCustomContext("ddp_batches", std::to_string(s.batches));
  benchmark::AddCustomContext("ddp_batch_us", std::to_string(s.batch_us));
  benchmark::AddCustomContext("ddp_device", std::to_string(s.device) + ": " + prop.name);
  benchmark::AddCustomContext("ddp_device_sms", std::to_string(sms));
  benchmark::AddCustomContext("ddp_device_l2_bytes", std::to_string(l2));
  benchmark::AddCustomContext("ddp_device_memory_bytes", std::to_string(prop.totalGlobalMem));
  benchmark::AddCustomContext("ddp_mps_client", mps != 0 ? "yes" : "no");
  benchmark::AddCustomContext("ddp_shared_gpu", "no: one process");
  benchmark::AddCustomContext("ddp_mempool_release_threshold", "max (kept between batches)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintSummary(run, sel, s);
  run.rows.clear();
  run.timer.reset();
  DDP_CUDA_CHECK(cudaStreamDestroy(run.stream));
  if (run.failures > 0) {
    std::fprintf(stderr, "%s: %d benchmark(s) failed (their error is in the table)\n", kProgram, run.failures);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace ddp::bench::norm_kernels

int main(int argc, char** argv) {
  try {
    return ddp::bench::norm_kernels::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "norm_kernels: %s\n", e.what());
    return 1;
  }
}

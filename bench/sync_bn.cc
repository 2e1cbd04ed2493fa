// bench/sync_bn: forward + backward time per call of local BatchNorm,
// SyncBatchNorm and GroupNorm on W real ranks (Gloo by default), with the
// time spent inside collectives separated from compute, the bytes and
// collectives per step, and the one-collective latency floor (the same
// all-gather + all-reduce alone) measured in the same run.
//
// Google Benchmark across ranks: every rank registers the same benchmarks
// and runs them with a FIXED iteration count that rank 0 decides once
// (a short calibration) and broadcasts — a rank running one iteration more
// than its peers would wait forever in a collective (the very bug studied
// in drop_last_hang). Each iteration starts after a barrier and is timed
// manually; its time is the slowest rank's (a max all-reduce outside the
// timed span), as in bench/padding. Per shape the four methods run in
// interleaved repetitions (--reps; A B A B, not A A B B), each
// repetition's number is its median iteration, and every ratio is taken
// within one repetition: a burst of load hits the methods of a repetition
// alike. Rank 0 reports (console table, --benchmark_format /
// --benchmark_out), the other ranks discard their reports.
//
// Where the layers compute (--norm_device, core/device/make_device.h; auto:
// the GPU under --backend nccl, else the host):
//  - host: core/nn's Eigen layers on host tensors, collectives on host
//    buffers (NCCL stages them through the GPU);
//  - emulated / cuda: core/device's DeviceBatchNorm / DeviceGroupNorm on
//    device-resident x and dy (uploaded once, before the timed iterations),
//    writing y and dx to device memory; SyncBN's all-gather and all-reduce
//    on device buffers (fixes/small_batch_bn's device hooks), the floor too.
//    Only the layers' parameters cross per call (they live on the host:
//    gamma, beta, running stats up; running stats, dgamma, dbeta down;
//    SyncBN: the W counts), counted per step in the JSON. A step is timed
//    with the steady clock and ends with Device::Synchronize (the queued
//    kernels are inside the step), as the collectives are (the Comm API
//    returns when they are done); the kernels between the collectives are
//    also timed on the device itself (Device spans: CUDA events on the
//    device's stream; the emulation's steady clock), the JSON's kernel_us.
//    Before timing, each case's device forward + backward is checked
//    against core/nn's on the same input (core/device/device_tolerance.h);
//    a rank whose output differs fails the run.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "bench/benchmark_flags.h"
#include "bench/common/report.h"
#include "bench/common/sched.h"
#include "core/cli/flags.h"
#include "core/comm/make_comm.h"
#include "core/comm/options.h"
#include "core/device/batch_norm.h"
#include "core/device/device_tolerance.h"
#include "core/device/group_norm.h"
#include "core/device/make_device.h"
#include "core/launch/spawn.h"
#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "core/nn/rng.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;
using S = float;

struct Settings {
  int world_size = 4;
  std::string backend = "gloo";
  int spatial = 8;
  std::vector<int> channels = {16, 64, 256, 1024};
  std::vector<int> batches = {2, 8, 32};
  double target_s = 0.25;  // calibration target per benchmark and repetition
  double timeout = 60;
  int reps = 5;                 // interleaved repetitions of every shape's methods
  std::string sched = "batch";  // scheduling class of the ranks (bench/common/sched.h)
  bool pin_cpus = false;        // rank r on one CPU (PinToCpu, bench/common/sched.h)
  std::string norm_device = "auto";  // --norm_device (core/device/make_device.h)
};

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

enum class Kind { kBn, kSyncBn, kGroupNorm, kFloor };
const char* Name(Kind k) {
  switch (k) {
    case Kind::kBn: return "bn";
    case Kind::kSyncBn: return "sync_bn";
    case Kind::kGroupNorm: return "group_norm";
    case Kind::kFloor: return "comm_floor";
  }
  return "?";
}
constexpr Kind kKinds[] = {Kind::kBn, Kind::kSyncBn, Kind::kGroupNorm, Kind::kFloor};

// "/C:<c>/N:<n>/HW:<s>x<s>": the shape part of a benchmark's name.
std::string ShapeTail(int c, int n, int spatial) {
  return "/C:" + std::to_string(c) + "/N:" + std::to_string(n) + "/HW:" + std::to_string(spatial) + "x" +
         std::to_string(spatial);
}

// The names this run registers, in order: per shape, repetition by
// repetition, every method (Google Benchmark appends
// "/iterations:K/manual_time" when it reports them).
std::vector<std::string> BenchmarkNames(const Settings& s) {
  std::vector<std::string> names;
  for (int c : s.channels) {
    for (int n : s.batches) {
      for (int rep = 0; rep < s.reps; ++rep) {
        for (Kind kind : kKinds) {
          names.push_back(Name(kind) + ShapeTail(c, n, s.spatial) + "/rep:" + std::to_string(rep));
        }
      }
    }
  }
  return names;
}

// Four device allocations of one case: x, dy, y, dx (the floor: the
// all-gather's input and output, the all-reduce's buffer).
struct DeviceBuffers {
  explicit DeviceBuffers(device::Device<S>* dev) : a(dev), b(dev), c(dev), d(dev) {}
  device::DeviceArray<S> a, b, c, d;
};

// One benchmark's state on this rank.
struct Case {
  Kind kind;
  int c, n;
  std::unique_ptr<nn::NormLayer<S>> layer;
  nn::Tensor4<S> x, dy;
  double comm_s = 0;  // seconds inside collectives, accumulated by the hooks
  double kernel_s = 0;  // the last device step's kernel time (Device spans)
  small_batch_bn::SyncBnTraffic traffic;
  // The device path (--norm_device emulated / cuda); dev == nullptr: host.
  device::Device<S>* dev = nullptr;
  device::DeviceBatchNorm<S>* dbn = nullptr;  // = layer, for BN and SyncBN
  device::DeviceGroupNorm<S>* dgn = nullptr;  // = layer, for GroupNorm
  std::unique_ptr<DeviceBuffers> buf;
  double check_err = 0;  // device vs core/nn forward + backward, normwise relative
};

// One repetition of one benchmark: its median iteration and the median
// time inside collectives (each the slowest rank's), seconds.
struct Summary {
  double time_s = 0, comm_s = 0;
};

int GroupsFor(int c) { return std::min(32, std::max(1, c / 2)); }

// ||a - b|| / ||b|| (0 when both are 0).
double RelErr(const nn::Tensor4<S>& a, const nn::Tensor4<S>& b) {
  double num = 0, den = 0;
  for (Eigen::Index i = 0; i < b.data.size(); ++i) {
    const double d = static_cast<double>(a.data[i]) - static_cast<double>(b.data[i]);
    num += d * d;
    den += static_cast<double>(b.data[i]) * b.data[i];
  }
  return num == 0 ? 0 : std::sqrt(num / den);
}

// The device layer's forward + backward on the case's device-resident x and
// dy (y and dx stay on the device), every queued kernel finished; the
// kernels' device time in cs.kernel_s (SyncBN's hooks close the span before
// each collective and open the next after it).
void StepOnDevice(Case& cs) {
  S *x = cs.buf->a.get(), *dy = cs.buf->b.get(), *y = cs.buf->c.get(), *dx = cs.buf->d.get();
  cs.dev->BeginSpan();
  if (cs.dbn) {
    cs.dbn->ForwardOnDevice(x, cs.x, y);
    cs.dbn->BackwardOnDevice(dy, dx);
  } else {
    cs.dgn->ForwardOnDevice(x, cs.x, y);
    cs.dgn->BackwardOnDevice(dy, dx);
  }
  cs.dev->EndSpan();
  cs.dev->Synchronize();
  cs.kernel_s = cs.dev->TakeSpanSeconds();
}

// SyncBN's device hooks, with the time inside them added to cs->comm_s.
// The device is synchronised first: the kernels queued before a collective
// are compute, not its time; the kernels' span ends there and the next
// begins after the collective.
device::DeviceBatchNormHooks<S> TimedDeviceHooks(comm::Comm& comm, Case* cs) {
  device::DeviceBatchNormHooks<S> inner = small_batch_bn::SyncBatchNormDeviceHooks<S>(comm, &cs->traffic);
  device::DeviceBatchNormHooks<S> timed;
  timed.merge_stats = [inner, cs](device::Device<S>& d, device::DeviceArray<S>& scratch, const S* local,
                                  int64_t local_count, int64_t c, S* mean, S* m2) {
    d.EndSpan();
    d.Synchronize();
    const auto t0 = Clock::now();
    const int64_t count = inner.merge_stats(d, scratch, local, local_count, c, mean, m2);
    cs->comm_s += Seconds(t0, Clock::now());
    d.BeginSpan();
    return count;
  };
  timed.merge_grad_sums = [inner, cs](device::Device<S>& d, S* sums, int64_t c) {
    d.EndSpan();
    d.Synchronize();
    const auto t0 = Clock::now();
    inner.merge_grad_sums(d, sums, c);
    cs->comm_s += Seconds(t0, Clock::now());
    d.BeginSpan();
  };
  return timed;
}

// The case on a device: x and dy uploaded once (outside every timed span),
// y and dx allocated, the device layer built; then one forward + backward
// checked against core/nn's layer of the same kind on the same x, dy (on
// every rank, in the same order: SyncBN's collectives match). Throws when
// they differ by more than core/device's step tolerance.
void PrepareOnDevice(comm::Comm& comm, Case& cs, device::Device<S>* dev, int groups) {
  cs.dev = dev;
  cs.buf = std::make_unique<DeviceBuffers>(dev);
  const std::size_t c = static_cast<std::size_t>(cs.c);
  if (cs.kind == Kind::kFloor) {
    const std::size_t per = 2 * c + 1;
    const std::vector<S> ones(per, 1.0f);
    dev->Upload(cs.buf->a.Reserve(per), ones.data(), per, device::CopyKind::kStatistic);
    cs.buf->b.Reserve(per * static_cast<std::size_t>(comm.world_size()));
    dev->Upload(cs.buf->c.Reserve(2 * c), ones.data(), 2 * c, device::CopyKind::kStatistic);
    dev->Synchronize();
    return;
  }
  const std::size_t size = cs.x.Size();
  dev->Upload(cs.buf->a.Reserve(size), cs.x.data.data(), size, device::CopyKind::kActivation);
  dev->Upload(cs.buf->b.Reserve(size), cs.dy.data.data(), size, device::CopyKind::kActivation);
  cs.buf->c.Reserve(size);
  cs.buf->d.Reserve(size);
  std::unique_ptr<nn::NormLayer<S>> host;
  if (cs.kind == Kind::kGroupNorm) {
    auto layer = std::make_unique<device::DeviceGroupNorm<S>>(dev, cs.c, groups);
    cs.dgn = layer.get();
    cs.layer = std::move(layer);
    host = std::make_unique<nn::GroupNorm<S>>(cs.c, groups);
  } else {
    const bool sync = cs.kind == Kind::kSyncBn;
    auto layer = std::make_unique<device::DeviceBatchNorm<S>>(
        dev, cs.c, nn::BatchNormOptions{}, sync ? TimedDeviceHooks(comm, &cs) : device::DeviceBatchNormHooks<S>{});
    cs.dbn = layer.get();
    cs.layer = std::move(layer);
    host = sync ? std::make_unique<nn::BatchNorm<S>>(cs.c, nn::BatchNormOptions{},
                                                      small_batch_bn::SyncBatchNormHooks<S>(comm))
                : std::make_unique<nn::BatchNorm<S>>(cs.c);
  }
  const nn::Tensor4<S> y_host = host->Forward(cs.x), dx_host = host->Backward(cs.dy);
  StepOnDevice(cs);
  nn::Tensor4<S> y = nn::EmptyLike(cs.x), dx = nn::EmptyLike(cs.dy);
  dev->Download(y.data.data(), cs.buf->c.get(), size, device::CopyKind::kActivation);
  dev->Download(dx.data.data(), cs.buf->d.get(), size, device::CopyKind::kActivation);
  cs.check_err = std::max(RelErr(y, y_host), RelErr(dx, dx_host));
  if (!(cs.check_err <= device::StepTolerance<S>())) {
    char text[256];
    std::snprintf(text, sizeof(text),
                  "%s C=%d N=%d on %s: forward+backward differs from core/nn's by %.3g (normwise relative), "
                  "over the tolerance %.3g (core/device/device_tolerance.h)",
                  Name(cs.kind), cs.c, cs.n, dev->kind().c_str(), cs.check_err, device::StepTolerance<S>());
    throw std::runtime_error(text);
  }
}

std::unique_ptr<Case> MakeCase(comm::Comm& comm, Kind kind, int c, int n, int spatial,
                               device::Device<S>* dev) {
  auto cs = std::make_unique<Case>();
  cs->kind = kind;
  cs->c = c;
  cs->n = n;
  nn::Rng rng(comm.rank() * 7919 + c * 31 + n);
  cs->x = nn::Tensor4<S>(n, c, spatial, spatial);
  cs->dy = nn::Tensor4<S>(n, c, spatial, spatial);
  for (Eigen::Index i = 0; i < cs->x.data.size(); ++i) {
    cs->x.data[i] = static_cast<S>(rng.Normal(3, 2));
    cs->dy.data[i] = static_cast<S>(rng.Normal());
  }
  if (dev != nullptr) {
    PrepareOnDevice(comm, *cs, dev, GroupsFor(c));
    return cs;
  }
  if (kind == Kind::kBn) cs->layer = std::make_unique<nn::BatchNorm<S>>(c);
  if (kind == Kind::kGroupNorm) cs->layer = std::make_unique<nn::GroupNorm<S>>(c, GroupsFor(c));
  if (kind == Kind::kSyncBn) {
    nn::BatchNormHooks<S> inner = small_batch_bn::SyncBatchNormHooks<S>(comm, &cs->traffic);
    Case* raw = cs.get();
    nn::BatchNormHooks<S> timed;
    timed.merge_stats = [inner, raw](const nn::ChannelStats<S>& l) {
      const auto t0 = Clock::now();
      auto r = inner.merge_stats(l);
      raw->comm_s += Seconds(t0, Clock::now());
      return r;
    };
    timed.merge_grad_sums = [inner, raw](const nn::ChannelGradSums<S>& l) {
      const auto t0 = Clock::now();
      auto r = inner.merge_grad_sums(l);
      raw->comm_s += Seconds(t0, Clock::now());
      return r;
    };
    cs->layer = std::make_unique<nn::BatchNorm<S>>(c, nn::BatchNormOptions{}, timed);
  }
  return cs;
}

// One forward + backward (or, for the floor, the two collectives alone).
void Step(comm::Comm& comm, Case& cs, std::vector<S>& gather_in, std::vector<S>& reduce_buf) {
  if (cs.dev != nullptr && cs.kind == Kind::kFloor) {  // the same two collectives, on device buffers
    const std::size_t c = static_cast<std::size_t>(cs.c);
    const auto t0 = Clock::now();
    comm.Allgather(cs.buf->a.get(), cs.buf->b.get(), 2 * c + 1, comm::DTypeOf<S>());
    comm.Allreduce(cs.buf->c.get(), 2 * c, comm::DTypeOf<S>(), comm::ReduceOp::kSum);
    cs.comm_s += Seconds(t0, Clock::now());
    return;
  }
  if (cs.dev != nullptr) {
    StepOnDevice(cs);
    return;
  }
  if (cs.kind == Kind::kFloor) {
    const auto t0 = Clock::now();
    std::vector<S> all = comm.Allgather(std::span<const S>(gather_in));
    benchmark::DoNotOptimize(all.data());
    comm.Allreduce(std::span<S>(reduce_buf));
    cs.comm_s += Seconds(t0, Clock::now());
    return;
  }
  nn::Tensor4<S> y = cs.layer->Forward(cs.x);
  benchmark::DoNotOptimize(y.data.data());
  nn::Tensor4<S> dx = cs.layer->Backward(cs.dy);
  benchmark::DoNotOptimize(dx.data.data());
}

// Per shape: each method's median over the repetitions, and the ratios
// taken within each repetition, median [min, max].
void PrintSummary(const Settings& s, int world_size, const std::string& backend,
                  const std::vector<std::pair<int, int>>& shapes,
                  const std::map<std::string, std::map<int, Summary>>& times) {
  std::printf("\nsummary (W=%d, %s, float, HxW %dx%d, %d interleaved repetitions; median [min, max] over "
              "them, each the repetition's median iteration of the slowest rank): SyncBN overhead over BN, "
              "and its collective time vs the floor (the same all-gather + all-reduce alone)\n",
              world_size, backend.c_str(), s.spatial, s.spatial, s.reps);
  auto spread = [](const std::vector<double>& v, const char* fmt) {
    char text[96];
    std::snprintf(text, sizeof(text), fmt, Median(v), *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()));
    return std::string(text);
  };
  for (const auto& [c, n] : shapes) {
    const std::string tail = ShapeTail(c, n, s.spatial);
    auto get = [&](Kind k) {
      const auto it = times.find(Name(k) + tail);
      return it == times.end() ? std::map<int, Summary>{} : it->second;
    };
    const auto bn = get(Kind::kBn), sync = get(Kind::kSyncBn), gn = get(Kind::kGroupNorm),
               floor = get(Kind::kFloor);
    std::vector<double> bn_us, sync_us, comm_us, floor_us, gn_us, overhead, comm_floor, gn_bn;
    for (int rep = 0; rep < s.reps; ++rep) {
      if (!bn.count(rep) || !sync.count(rep) || !floor.count(rep)) continue;  // filtered out
      bn_us.push_back(1e6 * bn.at(rep).time_s);
      sync_us.push_back(1e6 * sync.at(rep).time_s);
      comm_us.push_back(1e6 * sync.at(rep).comm_s);
      floor_us.push_back(1e6 * floor.at(rep).time_s);
      overhead.push_back(sync.at(rep).time_s / bn.at(rep).time_s);
      comm_floor.push_back(sync.at(rep).comm_s / floor.at(rep).time_s);
      if (gn.count(rep)) {
        gn_us.push_back(1e6 * gn.at(rep).time_s);
        gn_bn.push_back(gn.at(rep).time_s / bn.at(rep).time_s);
      }
    }
    if (bn_us.empty()) continue;
    std::printf("C=%-5d N=%-3d bn %9.1f us  sync_bn %9.1f us (comm %8.1f us)  overhead %s  floor %8.1f us  "
                "sync comm/floor %s",
                c, n, Median(bn_us), Median(sync_us), Median(comm_us),
                spread(overhead, "x%.2f [%.2f, %.2f]").c_str(), Median(floor_us),
                spread(comm_floor, "%.2f [%.2f, %.2f]").c_str());
    if (!gn_us.empty()) {
      std::printf("  group_norm %9.1f us (x%s bn)", Median(gn_us),
                  spread(gn_bn, "%.2f [%.2f, %.2f]").c_str());
    }
    std::printf("\n");
  }
}

int RankMain(const launch::RankEnv& env, const Settings& s, std::vector<char*> gb_args) {
  UseSchedPolicy(s.sched);  // before Gloo's threads exist: they inherit it
  if (s.pin_cpus) PinToCpu(env.rank);
  comm::CommOptions opts = comm::OptionsFromRankEnv(env);
  opts.timeout = std::chrono::milliseconds(static_cast<int64_t>(s.timeout * 1000));
  auto comm = comm::MakeComm(opts);
  const bool leader = comm->rank() == 0;
  // After MakeComm: under NCCL the communicator has made its GPU current.
  const device::Placement placement = device::Resolve(device::ParsePlacement(s.norm_device), comm->backend());
  const std::unique_ptr<device::Device<S>> dev = device::MakeDevice<S>(placement);
  // W ranks on fewer GPUs than W (the launcher's rule, core/launch/share_gpu.h):
  // functional numbers, never performance claims.
  const bool shared_gpu = env.share_gpu;
  if (!leader) {
    // Only rank 0 writes --benchmark_out / chooses the format.
    std::vector<char*> kept;
    for (char* a : gb_args) {
      const std::string arg = a;
      if (arg.rfind("--benchmark_out", 0) != 0 && arg.rfind("--benchmark_format", 0) != 0) kept.push_back(a);
    }
    gb_args = kept;
  }
  int gb_argc = static_cast<int>(gb_args.size());
  gb_args.push_back(nullptr);
  benchmark::Initialize(&gb_argc, gb_args.data());

  // Calibration: every rank runs a few synchronised SyncBN steps per
  // configuration; rank 0 turns its timing into an iteration count.
  std::vector<std::pair<int, int>> shapes;
  for (int c : s.channels) {
    for (int n : s.batches) shapes.push_back({c, n});
  }
  std::vector<int64_t> iters(shapes.size());
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    auto cs = MakeCase(*comm, Kind::kSyncBn, shapes[i].first, shapes[i].second, s.spatial, dev.get());
    std::vector<S> g, r;
    Step(*comm, *cs, g, r);  // warm-up
    comm->Barrier();
    const auto t0 = Clock::now();
    for (int k = 0; k < 2; ++k) Step(*comm, *cs, g, r);
    const double per = Seconds(t0, Clock::now()) / 2;
    iters[i] = std::clamp<int64_t>(static_cast<int64_t>(s.target_s / std::max(per, 1e-7)), 3, 1000);
  }
  comm->Broadcast(std::span<int64_t>(iters), 0);  // the one decision every rank follows

  // times[method + shape][rep]; filled as the benchmarks run.
  std::map<std::string, std::map<int, Summary>> times;
  std::vector<std::unique_ptr<Case>> cases;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto [c, n] = shapes[i];
    for (Kind kind : kKinds) cases.push_back(MakeCase(*comm, kind, c, n, s.spatial, dev.get()));
    // This shape's four cases; a case keeps its layer and data over the
    // repetitions (each repetition resets its counters).
    const std::unique_ptr<Case>* first = &cases[cases.size() - std::size(kKinds)];
    for (int rep = 0; rep < s.reps; ++rep) {
      for (std::size_t k = 0; k < std::size(kKinds); ++k) {
        Case* cs = first[k].get();
        const std::string key = Name(kKinds[k]) + ShapeTail(c, n, s.spatial);
        const std::string name = key + "/rep:" + std::to_string(rep);
        comm::Comm* cm = comm.get();
        const int w = comm->world_size();
        benchmark::RegisterBenchmark(name.c_str(), [cs, cm, w, key, rep, shared_gpu, &times](
                                                       benchmark::State& state) {
          std::vector<S> gather_in(2 * cs->c + 1, 1.0f), reduce_buf(2 * cs->c, 1.0f);
          cs->comm_s = 0;
          cs->traffic = {};
          std::vector<double> dts, comms, computes, kernels;
          const device::CopyCount copies_before = cs->dev ? cs->dev->copies() : device::CopyCount{};
          for (auto _ : state) {
            cm->Barrier();  // every rank starts the iteration together
            const double comm_before = cs->comm_s;
            cs->kernel_s = 0;
            const auto t0 = Clock::now();
            Step(*cm, *cs, gather_in, reduce_buf);
            // The slowest rank's step, time in collectives and kernel time,
            // outside the timed span (the hooks time SyncBN's own collectives only).
            double v[3] = {Seconds(t0, Clock::now()), cs->comm_s - comm_before, cs->kernel_s};
            cm->Allreduce(std::span<double>(v, 3), comm::ReduceOp::kMax);
            state.SetIterationTime(v[0]);
            dts.push_back(v[0]);
            comms.push_back(v[1]);
            computes.push_back(v[0] - v[1]);  // >= 0: the slowest rank's step covers its own comm
            kernels.push_back(v[2]);
          }
          const double it = static_cast<double>(state.iterations());
          const bool sync = cs->kind == Kind::kSyncBn || cs->kind == Kind::kFloor;
          const double collectives = sync ? 2 : 0;
          // Per step: all-gather of 2C+1 (W x that received) + all-reduce of 2C.
          const double contributed = sync ? (4 * cs->c + 1) * sizeof(S) : 0;
          const double received = sync ? (w * (2 * cs->c + 1) + 2 * cs->c) * sizeof(S) : 0;
          if (cs->kind == Kind::kSyncBn && it > 0) {
            // Cross-check the formula against what the layer really sent.
            if (cs->traffic.collectives != static_cast<int64_t>(2 * it) ||
                cs->traffic.bytes_received != static_cast<int64_t>(received * it)) {
              state.SkipWithError("SyncBN traffic differs from the formula");
            }
          }
          if (dts.empty()) return;
          // A repetition's number is its median iteration: one descheduled
          // iteration in a few hundred moves a mean and says nothing.
          const Summary rep_summary{Median(dts), Median(comms)};
          times[key][rep] = rep_summary;
          state.counters["W"] = w;
          state.counters["rep"] = rep;
          state.counters["median_us"] = 1e6 * rep_summary.time_s;
          state.counters["comm_us"] = 1e6 * rep_summary.comm_s;
          state.counters["compute_us"] = 1e6 * Median(computes);
          state.counters["collectives"] = collectives;
          // Rows where the ranks share GPUs are functional only (label and counter).
          state.counters["shared_gpu"] = shared_gpu ? 1 : 0;
          if (shared_gpu) state.SetLabel("shared_gpu");
          if (cs->dev) {
            // Per step, what crossed between host and device (the parameters;
            // the activations stay on the device), and the pre-timing check.
            const device::CopyCount d = cs->dev->copies() - copies_before;
            state.counters["h2d_bytes"] = static_cast<double>(d.H2d().bytes) / it;
            state.counters["d2h_bytes"] = static_cast<double>(d.D2h().bytes) / it;
            if (cs->kind != Kind::kFloor) {
              state.counters["check_rel_err"] = cs->check_err;
              // The kernels alone, on the device's own clock (the slowest rank's
              // median); compute_us beside it also holds the host's launches
              // and the synchronisations around the collectives.
              state.counters["kernel_us"] = 1e6 * Median(kernels);
            }
          }
          state.counters["bytes_sent"] = contributed;
          state.counters["bytes_recv"] = received;
          if (const std::vector<double> load = LoadAverages(); !load.empty()) {
            state.counters["load1"] = load[0];
          }
          // PyTorch 1.13 SyncBatchNorm for the same shape (torch/nn/modules/_functions.py):
          // all_gather of cat(mean, invstd, count) = 2C+1 and all_reduce of
          // cat(sum_dy, sum_dy_xmu) = 2C: the same two collectives and bytes.
          if (cs->kind == Kind::kSyncBn) {
            state.counters["torch_collectives"] = 2;
            state.counters["torch_bytes_recv"] = (w * (2 * cs->c + 1) + 2 * cs->c) * sizeof(S);
          }
        })->Iterations(iters[i])->UseManualTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
  if (leader) {
    benchmark::AddCustomContext("ddp_backend", comm->backend());
    benchmark::AddCustomContext("ddp_world_size", std::to_string(comm->world_size()));
    benchmark::AddCustomContext("ddp_reps", std::to_string(s.reps));
    benchmark::AddCustomContext("ddp_sched", s.sched);
    benchmark::AddCustomContext("ddp_pin_cpus", s.pin_cpus ? "yes" : "no");
    benchmark::AddCustomContext("ddp_norm_device", device::ToString(placement));
    benchmark::AddCustomContext(
        "ddp_timing",
        !dev ? "steady clock (host)"
             : std::string("steady clock, step ends with Device::Synchronize; kernel_us: ") +
                   (dev->kind() == "cuda" ? "CUDA events on the device's stream around the kernels between "
                                            "collectives"
                                          : "steady clock around the emulated kernels between collectives"));
    benchmark::AddCustomContext("ddp_shared_gpu",
                                shared_gpu ? "yes: the ranks share fewer GPUs than ranks (core/launch/share_gpu.h); "
                                             "functional only, not for performance claims"
                                           : "no");
    AddRunContext(comm->world_size());
    benchmark::RunSpecifiedBenchmarks();
  } else {
    NullReporter null_reporter;
    benchmark::RunSpecifiedBenchmarks(&null_reporter);
  }
  benchmark::Shutdown();
  if (leader) {
    PrintSummary(s, comm->world_size(), comm->backend(), shapes, times);
    std::printf("norm_device %s%s\n", device::ToString(placement),
                dev ? " (device-resident x, dy; collectives and the floor on device buffers; each case checked "
                      "against core/nn before timing)"
                    : " (core/nn's Eigen layers on the host)");
    if (shared_gpu) {
      std::printf("shared_gpu: the %d ranks share fewer GPUs than ranks (core/launch/share_gpu.h): every row "
                  "is labelled shared_gpu; functional numbers, not for performance claims\n",
                  comm->world_size());
    }
  }
  comm->Finish();
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  using ddp::bench::Settings;
  Settings s;
  // --benchmark_* go to Google Benchmark (on every rank), once checked; the
  // rest are ours.
  ddp::bench::BenchmarkFlags bf;
  if (const std::string err = ddp::bench::ParseBenchmarkFlags(
          argc, argv, ddp::bench::CommonBenchmarkFlags(), &bf);
      !err.empty()) {
    std::fprintf(stderr, "sync_bn: %s\n", err.c_str());
    return 2;
  }
  std::vector<char*> ours = bf.ours, gb = {argv[0]};
  for (auto& a : bf.args) gb.push_back(a.data());
  ddp::cli::Flags flags("sync_bn",
                        "Google Benchmark of BatchNorm, SyncBatchNorm and GroupNorm forward+backward on W spawned\n"
                        "ranks, collectives separated from compute, with the one-collective floor, in\n"
                        "interleaved repetitions (each the slowest rank's median iteration).\n"
                        "--benchmark_* flags (format, out, filter) are passed to Google Benchmark.");
  flags.Int("world_size", &s.world_size, "number of ranks to spawn", 1, 64);
  flags.Choice("backend", &s.backend, "collective engine", {"gloo", "nccl"});
  flags.Int("spatial", &s.spatial, "H = W of the feature maps", 1, 256);
  flags.IntList("channels", &s.channels, "channel counts C", 1, 65536);
  flags.IntList("batch", &s.batches, "per-rank batch sizes N", 1, 4096);
  flags.Double("target_s", &s.target_s, "calibration: seconds per benchmark (sets the shared iteration count)",
               1e-4, 60);
  flags.Double("timeout", &s.timeout, "deadline of every collective, seconds", 0.05, 3600);
  flags.Int("reps", &s.reps,
            "interleaved repetitions of every shape's methods (the summary gives their median, min, max)",
            1, 100);
  flags.Choice("sched", &s.sched,
               "scheduling class of the rank processes (batch: no wakeup preemption; see "
               "bench/common/sched.h)",
               ddp::bench::SchedPolicies());
  flags.Bool("pin_cpus", &s.pin_cpus,
             "pin rank r (and its Gloo threads) to the (r mod n)-th allowed CPU (bench/regen.sh sets it; "
             "off by default, as a rank runs in a job)");
  flags.Choice("norm_device", &s.norm_device,
               "where the norm layers compute: auto (the GPU under --backend nccl, else the host), host "
               "(Eigen), emulated (the device path on the host), cuda",
               {"auto", "host", "emulated", "cuda"});
  flags.ParseOrExit(static_cast<int>(ours.size()), ours.data());
  if (const std::string why = ddp::device::PlacementError(ddp::device::ParsePlacement(s.norm_device), s.backend);
      !why.empty()) {
    std::fprintf(stderr, "sync_bn: %s\n", why.c_str());
    return 2;
  }
  // A filter that selects none of this run's benchmarks would spawn the ranks
  // for an empty table: a usage error instead.
  const std::vector<std::string> names = ddp::bench::BenchmarkNames(s);
  if (std::none_of(names.begin(), names.end(),
                   [&](const std::string& n) { return ddp::bench::FilterSelects(bf.filter, n); })) {
    std::fprintf(stderr, "sync_bn: --benchmark_filter='%s' selects none of this run's %zu benchmarks (e.g. %s)\n",
                 bf.filter.c_str(), names.size(), names.front().c_str());
    return 2;
  }

  ddp::launch::SpawnOptions so;
  so.backend = s.backend;
  so.fail_fast = true;
  // NCCL ranks share GPUs only when fewer are visible than ranks (SpawnRanks
  // decides and says so): on a machine with a GPU per rank the timings are real.
  so.deadline = std::chrono::seconds(600);
  const auto result = ddp::launch::SpawnRanks(
      s.world_size, [&](const ddp::launch::RankEnv& env) { return ddp::bench::RankMain(env, s, gb); }, so);
  if (!result.ranks.empty()) std::fputs(result.ranks[0].stdout_text.c_str(), stdout);
  if (!result.all_ok()) {
    for (const auto& r : result.ranks) {
      if (!r.ok()) std::fprintf(stderr, "rank %d: %s\n%s", r.rank, r.Describe().c_str(), r.stderr_text.c_str());
    }
    return 1;
  }
  return 0;
}

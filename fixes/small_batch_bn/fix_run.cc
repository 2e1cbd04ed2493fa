// fixes/small_batch_bn: SyncBatchNorm, GroupNorm and PreciseBN under DDP,
// judged per step (step_exact.h).
//
// One record per fix and setting (per-rank batches, even or not):
//   sync_bn, group_norm  exact when, at every step started from the
//                        reference's state, the averaged gradients, updated
//                        parameters and running statistics of every rank
//                        agree with the one-process step to 1e-12 relative.
//                        trajectory_rel_err: free-running DDP vs the
//                        free-running reference after all steps (information).
//   precise_bn           exact when, after every training step, PreciseBN's
//                        cross-rank running statistics equal the one-process
//                        average over the same batches to 1e-12. rs_err_shrink:
//                        how much PreciseBN cut the running-stat error
//                        against the eval-time population (information).
// An empty rank appears in the uneven settings (every fix allows it).
//
// config.norm_device says where the ranks' norm layers computed: "host"
// (core/nn's Eigen), "cuda" (the GPU; the default under --backend nccl) or
// "emulated" (the device path on the host, --norm_device emulated). Every
// record measures, per rank, for one training step (step_exact.h):
//   comm_staging   what the Comm copied to stage host buffers through device
//                  memory (NCCL: DDP's buffer broadcasts, and the gradient
//                  all-reduce when the layers are on the host; on a device
//                  that all-reduce runs on a device buffer; zero on Gloo);
//   device_copies  on a device only: the model device's host<->device copies
//                  by kind (core/device/device.h): activations (each layer's
//                  x, y, dy, dx: where the Eigen network hands over),
//                  parameters (gamma, beta, running stats, parameter
//                  gradients; DDP's flat gradient up and down for its
//                  all-reduce), statistics (SyncBN: the W gathered counts).
// On a device the reference is still core/nn's one process, to the same
// tolerance; reference.tolerance_basis says why it holds.
//
// The default run adds the cases users reported to PyTorch's and fvcore's
// trackers (sync_batch_norm_test and precise_bn_tracker_test hold them as
// tests), each record naming its source in config.source: issue 22192
// (SyncBN, per-rank batches 2 and 6), PR 74944 (SyncBN, an empty rank),
// fvcore 152 (PreciseBN with 1 and 3 batches on the two ranks).
#include "fixes/small_batch_bn/fix_run.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <string>

#include "fixes/small_batch_bn/step_exact.h"

namespace ddp::small_batch_bn {
namespace {

using results::Json;

struct Setting {
  std::vector<int> batches;
  std::vector<Fix> fixes = {Fix::kSyncBn, Fix::kGroupNorm, Fix::kPreciseBn};
  std::string source = {};              // a tracker case: where it was reported
  std::vector<int> precise_counts = {};  // PreciseBN batches per rank, when they differ
};

std::vector<Setting> Settings(const harness::CommonFlags& f, const FixOptions& o) {
  if (!o.batches.empty()) return {{o.batches}};
  if (!o.sweep) {
    return {{std::vector<int>(f.world_size, f.batch_size)},
            {{2, 6}, {Fix::kSyncBn}, "pytorch/pytorch issue 22192: running_var with per-rank batches 2 and 6"},
            {{0, 5}, {Fix::kSyncBn}, "pytorch/pytorch PR 74944 (issue 36530): a rank with an empty batch"},
            {{4, 4},
             {Fix::kPreciseBn},
             "facebookresearch/fvcore issue 152: PreciseBN with 1 and 3 batches per rank, counts synchronised",
             {1, 3}}};
  }
  std::vector<Setting> s;
  for (int w : {1, 2, 3, 4, 5, 8}) {
    for (int b : {1, 2, 3, 8}) s.push_back({std::vector<int>(w, b)});
  }
  // Uneven batches; ranks with none.
  s.push_back({{3, 1, 2}});
  s.push_back({{1, 3, 0, 5}});
  s.push_back({{0, 0, 3}});
  s.push_back({{2, 8, 1, 0, 3}});
  return s;
}

Json RankArray(const std::vector<Json>& per_rank) {
  Json a = Json::array();
  for (const Json& j : per_rank) a.push_back(j);
  return a;
}

std::string Join(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

}  // namespace

std::vector<results::Record> RunFix(const harness::CommonFlags& f, const FixOptions& o) {
  std::vector<results::Record> records;
  for (const Setting& setting : Settings(f, o)) {
    const std::vector<int>& batches = setting.batches;
    const bool even = std::all_of(batches.begin(), batches.end(), [&](int b) { return b == batches[0]; });
    for (Fix fix : setting.fixes) {
      results::Record rec;
      rec.bug = "small_batch_bn";
      rec.kind = results::Kind::kFix;
      rec.variant = ToString(fix);
      rec.backend = f.backend;
      rec.world_size = static_cast<int>(batches.size());
      Json b = Json::array();
      for (int x : batches) b.push_back(x);
      rec.config["batches"] = b;
      rec.config["batch_per_rank"] = even ? Json(batches[0]) : Json("uneven");
      rec.config["global_batch"] = std::accumulate(batches.begin(), batches.end(), 0);
      rec.config["steps"] = o.steps;
      rec.config["lr"] = o.lr;
      rec.config["seed"] = static_cast<double>(f.seed);
      const device::Placement placement = device::Resolve(o.placement, f.backend);
      rec.config["norm_device"] = device::ToString(placement);
      if (fix == Fix::kPreciseBn && setting.precise_counts.empty()) {
        rec.config["precise_batches"] = o.precise_batches;
      } else if (fix == Fix::kPreciseBn) {
        Json counts = Json::array();
        for (int x : setting.precise_counts) counts.push_back(x);
        rec.config["precise_batches"] = counts;
      }
      if (!setting.source.empty()) rec.config["source"] = setting.source;
      rec.reference["what"] = fix == Fix::kPreciseBn
                                  ? "one process: the plain average of the batch statistics over every rank's "
                                    "batches, the same parameters"
                                  : "one process on the global batch, started from the same state every step";
      rec.reference["tolerance"] = exact::kDoubleTolerance;
      if (placement != device::Placement::kHost) {
        rec.reference["tolerance_basis"] =
            "double; the ranks' norm layers ran core/cuda's kernels (Welford/Chan per block) against core/nn's "
            "two-pass Eigen in the reference: the same formulas summed in another order, within 4.5e-13 on "
            "core/cuda's own cases (core/device/device_tolerance.h)";
      }
      std::fprintf(stderr, "small_batch_bn fix: %s, batches {%s}, %d steps...\n", rec.variant.c_str(),
                   Join(batches).c_str(), o.steps);
      try {
        StepExactConfig c;
        c.fix = fix;
        c.batches = batches;
        c.steps = o.steps;
        c.precise_batches = o.precise_batches;
        c.precise_counts = setting.precise_counts;
        c.seed = static_cast<uint64_t>(f.seed);
        c.lr = o.lr;
        c.noise = o.noise;
        c.placement = placement;
        const StepExactResult r = RunStepExact(f, c);
        rec.measured["worst_rel_err"] = r.check.worst();
        for (const char* q : {"grad", "param", "running_stats", "precise_running_stats"}) {
          if (r.check.worst(q) >= 0) rec.measured[std::string(q) + "_rel_err"] = r.check.worst(q);
        }
        rec.measured["step_check"] = r.check.ToJson();
        if (fix == Fix::kPreciseBn) {
          rec.measured["rs_err_before"] = r.rs_err_before;
          rec.measured["rs_err_after"] = r.rs_err_after;
          rec.measured["rs_err_shrink"] = r.rs_err_before / r.rs_err_after;
        } else {
          rec.measured["trajectory_rel_err"] = r.trajectory_rel_err;
          rec.measured["trajectory_buffer_rel_err"] = r.trajectory_buffer_rel_err;
        }
        if (fix == Fix::kSyncBn) rec.measured["collectives_per_step"] = static_cast<double>(r.collectives_per_step);
        rec.measured["comm_staging"] = RankArray(r.comm_staging);
        if (!r.device_copies.empty()) rec.measured["device_copies"] = RankArray(r.device_copies);
        rec.verdict = r.check.exact() ? results::Verdict::kExact : results::Verdict::kInexact;
      } catch (const std::exception& e) {
        rec.verdict = results::Verdict::kError;
        rec.error = e.what();
      }
      records.push_back(rec);
    }
  }
  return records;
}

}  // namespace ddp::small_batch_bn

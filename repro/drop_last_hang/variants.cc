// repro/drop_last_hang: ranks that run different numbers of steps (seed 001).
//
// Each row predicts every rank's step count from the data pipeline alone
// (scenario.h), then runs the real training epoch on W processes (a raw
// gradient allreduce per step) and checks that the engine did what the
// prediction says:
//   equal steps    every rank finishes, equal collective counts: a control
//   unequal steps  the ranks with more steps block in allreduce #min_steps;
//                  with a collective deadline that becomes a DeadlineError
//                  on those ranks within deadline + 2 s, with a desync
//                  report whose verdict (the flight recorder analyzer's,
//                  over every rank's dump) names the ranks that never
//                  entered it and the allreduce's line; the fail-fast
//                  supervisor stops the rest; with no deadline it is a real
//                  hang that only the launcher's timeout ends (124); if the
//                  early ranks exit instead of waiting, Gloo reports a
//                  PeerError at once, and the verdict (from the dumps the
//                  early ranks left when they exited) says the same
#include "repro/drop_last_hang/variants.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>

#include "core/device/device_flag.h"
#include "core/launch/interrupt.h"
#include "core/trace/analyze.h"
#include "repro/drop_last_hang/hang_run.h"
#include "repro/drop_last_hang/scenario.h"

namespace ddp::drop_last_hang {
namespace {

void StopIfInterrupted() {
  if (const int sig = launch::InterruptSignal()) throw harness::Interrupted{sig};
}

using results::Json;

struct Row {
  std::string variant;
  Config config;
  HangOptions options;
};

Json IntArray(const std::vector<int64_t>& v) {
  Json a = Json::array();
  for (int64_t x : v) a.push_back(static_cast<long long>(x));
  return a;
}

std::string RankList(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::vector<Row> Rows(const harness::CommonFlags& f, const PairOptions& o) {
  std::vector<int> worlds = {f.world_size};
  if (o.sweep) worlds = {2, 4, 8};
  std::vector<Row> rows;
  for (int w : worlds) {
    HangOptions deadline;
    deadline.backend = f.backend;
    deadline.share_gpu = f.share_gpu;
    deadline.forward_signals = launch::InterruptHandlersInstalled();
    deadline.collective_deadline_s = f.timeout;
    deadline.world_deadline_s = 2 * f.timeout + 30;
    deadline.device = device::ResolveDeviceFlag(o.device, f.backend);
    auto add = [&](const char* variant, Sharding s, int64_t n, int b, HangOptions ho) {
      Row r;
      r.variant = variant;
      r.config = Config{.sharding = s, .n = n, .world_size = w, .batch_size = b,
                        .seed = static_cast<uint64_t>(f.seed), .drop_last = false};
      r.options = ho;
      const std::vector<int64_t> steps = StepCounts(r.config);
      const bool control = std::adjacent_find(steps.begin(), steps.end(),
                                              std::not_equal_to<>()) == steps.end();
      if (control && !o.controls) return;
      rows.push_back(r);
    };
    const int64_t uneven_n = UnevenN(f.n, w, f.batch_size);
    add("sampler_padding", Sharding::kSamplerPadding, f.n, f.batch_size, deadline);
    if (uneven_n != f.n) add("uneven_shards", Sharding::kUnevenShards, f.n, f.batch_size, deadline);
    add("uneven_shards", Sharding::kUnevenShards, uneven_n, f.batch_size, deadline);
    if (f.batch_size != 2) {
      add("filtered_batches", Sharding::kFilteredBatches, f.n, f.batch_size, deadline);
    }
    if (o.filtered_deadline_row) {
      add("filtered_batches", Sharding::kFilteredBatches, f.n, 2, deadline);
    }
    HangOptions none = deadline;
    none.collective_deadline_s = 86400;  // a day: no deadline in practice
    // NCCL's start-up (a CUDA context per rank, the communicator over
    // sockets on a shared GPU) must not use up the launcher's timeout before
    // the short ranks have finished: it is not part of the hang.
    none.world_deadline_s = o.hang_world_deadline_s + (f.backend == "nccl" ? o.nccl_startup_s : 0);
    add("uneven_shards_no_deadline", Sharding::kUnevenShards, uneven_n, f.batch_size, none);
    HangOptions leave = deadline;
    leave.early = EarlyRanks::kExit;
    add("uneven_shards_early_exit", Sharding::kUnevenShards, uneven_n, f.batch_size, leave);
  }
  return rows;
}

results::Record RunRow(const harness::CommonFlags& f, const Row& row) {
  const Config& c = row.config;
  results::Record rec;
  rec.bug = "drop_last_hang";
  rec.kind = results::Kind::kRepro;
  rec.variant = row.variant;
  rec.backend = f.backend;
  rec.world_size = c.world_size;
  const std::vector<int64_t> steps = StepCounts(c);
  const int64_t min_steps = *std::min_element(steps.begin(), steps.end());
  const int64_t max_steps = *std::max_element(steps.begin(), steps.end());
  std::vector<int> extra, short_ranks;
  for (int r = 0; r < c.world_size; ++r) (steps[r] > min_steps ? extra : short_ranks).push_back(r);
  rec.config["sharding"] = Name(c.sharding);
  rec.config["n"] = static_cast<long long>(c.n);
  rec.config["batch_size"] = c.batch_size;
  rec.config["seed"] = static_cast<long long>(c.seed);
  rec.config["collective_deadline_s"] = row.options.collective_deadline_s;
  rec.config["world_deadline_s"] = row.options.world_deadline_s;
  rec.config["early_ranks"] = row.options.early == EarlyRanks::kExit ? "exit" : "wait";
  rec.config["device"] = device::ToString(row.options.device);
  rec.reference["steps_per_rank"] = IntArray(steps);
  rec.reference["expected"] = min_steps == max_steps ? "equal steps: completes"
                              : row.options.early == EarlyRanks::kExit
                                  ? "peer error at allreduce #" + std::to_string(min_steps)
                              : row.options.collective_deadline_s < 3600
                                  ? "deadline error at allreduce #" + std::to_string(min_steps)
                                  : "hang until the launcher's timeout (124)";
  if (c.sharding == Sharding::kFilteredBatches) {
    // drop_last does not help here: it acts before the filter.
    Config dl = c;
    dl.drop_last = true;
    rec.reference["steps_with_drop_last"] = IntArray(StepCounts(dl));
  }

  // Ctrl-C or SIGTERM (PairMain's handlers): the running world is stopped
  // (forward_signals) and no row after it runs or is recorded.
  StopIfInterrupted();
  const HangRun hr = RunTrainingWorld(c, row.options);
  StopIfInterrupted();
  const auto& run = hr.run;
  rec.measured["launcher_exit_code"] = run.ExitCode();
  rec.measured["world_elapsed_s"] = run.elapsed.count() / 1000.0;
  std::string exits;
  bool all_nonzero = true, all_ok = true;
  int left = 0;
  for (const auto& r : run.ranks) {
    exits += (exits.empty() ? "" : "; ") + std::to_string(r.rank) + ": " + r.Describe();
    all_nonzero &= !r.ok();
    all_ok &= r.ok();
    left += hr.left_behind[static_cast<std::size_t>(r.rank)];
  }
  rec.measured["rank_exits"] = exits;
  rec.measured["processes_left"] = left;
  std::vector<int> finished;
  std::vector<int64_t> collectives;
  const FailureReport* failure = nullptr;  // the first failing rank's report
  for (int r = 0; r < c.world_size; ++r) {
    if (hr.finished[r]) {
      finished.push_back(r);
      collectives.push_back(hr.finished[r]->collectives);
    } else if (hr.failed[r] && (failure == nullptr || r == run.first_failed_rank)) {
      failure = &*hr.failed[r];
    }
  }
  rec.measured["finished_ranks"] = RankList(finished);
  // On a device: the first finished rank's copies over its epoch (a failed
  // rank reports none: its last upload has no download).
  if (!finished.empty() && !hr.finished[finished[0]]->device_copies.is_null()) {
    rec.measured["device_copies"] = hr.finished[finished[0]]->device_copies;
  }
  bool ok = false;
  if (min_steps == max_steps) {
    rec.control = true;
    const bool equal = collectives.size() == steps.size() &&
                       std::all_of(collectives.begin(), collectives.end(),
                                   [&](int64_t k) { return k == min_steps; });
    rec.measured["collectives_per_rank"] = IntArray(collectives);
    ok = all_ok && equal && left == 0;
    rec.verdict = ok ? results::Verdict::kControl : results::Verdict::kControlFailed;
    return rec;
  }
  rec.measured["extra_step_ranks"] = RankList(extra);
  if (row.options.collective_deadline_s >= 3600) {
    // The raw hang: nobody fails on their own; the launcher's deadline ends it.
    rec.measured["timed_out"] = run.timed_out();
    ok = run.timed_out() && run.ExitCode() == 124 && failure == nullptr &&
         finished == short_ranks && left == 0;
  } else if (failure != nullptr) {
    const std::string& kind = failure->kind;
    const int rank = failure->rank;
    const int64_t seq = failure->seq;
    const double detect = failure->elapsed_s;
    const std::string& report = failure->report;
    rec.measured["error"] = kind;
    rec.measured["failed_rank"] = rank;
    rec.measured["blocked_step"] = failure->step;
    rec.measured["blocked_seq"] = seq;
    rec.measured["blocked_op"] = failure->op;
    rec.measured["detect_s"] = detect;
    rec.measured["message"] = failure->message;
    const std::string& verdict = failure->verdict;
    rec.measured["verdict"] = verdict;
    rec.measured["mismatch_class"] = failure->mismatch_class;
    Json positions = Json::array();
    for (const std::string& line : PositionLines(report)) positions.push_back(line);
    rec.measured["positions"] = positions;
    rec.measured["report"] = report;
    // The analyzer's verdict over every rank's dump names the collective,
    // the ranks that never entered it and the line of the allreduce.
    const std::string site =
        "repro/drop_last_hang/hang_run.cc:" + std::to_string(GradientAllreduceLine());
    const bool names_missing =
        verdict.rfind("collective #" + std::to_string(min_steps) + " (allreduce float64 x", 0) == 0 &&
        verdict.find(trace::RankSet(short_ranks) + " never entered; ") != std::string::npos;
    const bool names_site = verdict.find(" at " + site) != std::string::npos;
    rec.measured["verdict_names_short_ranks"] = names_missing;
    rec.measured["verdict_names_call_site"] = names_site;
    if (const auto p = report.find("collected in "); p != std::string::npos) {
      rec.measured["report_wait_s"] = std::atof(report.c_str() + p + 13);
    }
    std::fprintf(stderr, "  desync report of rank %d (the first to fail):\n", rank);
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) std::fprintf(stderr, "    %s\n", line.c_str());
    const bool common = std::find(extra.begin(), extra.end(), rank) != extra.end() &&
                        seq == min_steps && failure->step == min_steps &&
                        finished == short_ranks && left == 0 && run.ExitCode() == 3;
    if (row.options.early == EarlyRanks::kExit && row.options.backend == "gloo") {
      // Gloo sees the closed connections: a PeerError well before the deadline.
      // The short ranks exit 0 on their own, often before the launcher's
      // fail-fast reaches them, so only the extra-step rank must fail.
      ok = common && kind == "peer" && detect < row.options.collective_deadline_s &&
           names_missing && names_site;
    } else if (row.options.early == EarlyRanks::kExit) {
      // NCCL may notice the departed peers (an asynchronous error: "peer")
      // or wait for the deadline: either is what it did (the record says
      // which); a report naming them within the deadline is what must hold.
      ok = common && (kind == "peer" || kind == "deadline") &&
           detect <= row.options.collective_deadline_s + kDetectSlackS && names_missing &&
           names_site;
    } else {
      // Waiting ranks are stopped by the launcher: every rank exits non-zero.
      ok = common && all_nonzero && kind == "deadline" && names_missing && names_site &&
           detect >= row.options.collective_deadline_s - 0.1 &&
           detect <= row.options.collective_deadline_s + kDetectSlackS;
    }
  }
  rec.verdict = ok ? results::Verdict::kReproduced : results::Verdict::kNotReproduced;
  return rec;
}

}  // namespace

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, const PairOptions& o) {
  std::vector<results::Record> records;
  for (const Row& row : Rows(f, o)) {
    std::fprintf(stderr, "drop_last_hang: %s W=%d N=%lld B=%d...\n", row.variant.c_str(),
                 row.config.world_size, static_cast<long long>(row.config.n),
                 row.config.batch_size);
    try {
      records.push_back(RunRow(f, row));
    } catch (const std::exception& e) {
      results::Record rec;
      rec.bug = "drop_last_hang";
      rec.variant = row.variant;
      rec.backend = f.backend;
      rec.world_size = row.config.world_size;
      rec.verdict = results::Verdict::kError;
      rec.error = e.what();
      records.push_back(rec);
    }
  }
  return records;
}

}  // namespace ddp::drop_last_hang

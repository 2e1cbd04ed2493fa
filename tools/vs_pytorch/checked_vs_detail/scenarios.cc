#include "tools/vs_pytorch/checked_vs_detail/scenarios.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <thread>

#include "core/comm/errors.h"

namespace ddp::checked_vs_detail {
namespace {

using results::Json;
using Clock = std::chrono::steady_clock;

constexpr Scenario kAll[] = {Scenario::kUnequalAllgather, Scenario::kAllreduceVsBarrier,
                             Scenario::kSumVsMax, Scenario::kExtraStepAlive};
constexpr int kSteps = 3;

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// The line of a desync report that names who never entered, if any.
std::string NeverEntered(const std::string& s) {
  const std::size_t at = s.find("never entered");
  if (at == std::string::npos) return "";
  const std::size_t begin = s.rfind('\n', at) + 1;
  return FirstLine(s.substr(begin));
}

// Runs the scenario's mismatched call on this rank; {"error": kind or
// "none", "message", "after_s"}.
Json RankBody(comm::Comm& comm, Scenario s, double deadline_s) {
  const int w = comm.world_size(), r = comm.rank();
  comm.Barrier();
  Json out;
  Clock::time_point t0 = Clock::now();
  try {
    if (s == Scenario::kUnequalAllgather) {
      std::vector<double> mine;
      for (int64_t i = r; i < kSamples; i += w) mine.push_back(static_cast<double>(i));
      std::vector<double> all(mine.size() * static_cast<std::size_t>(w));
      t0 = Clock::now();
      comm.Allgather(mine.data(), all.data(), mine.size(), comm::DType::kFloat64);
    } else if (s == Scenario::kAllreduceVsBarrier) {
      std::vector<double> v(4, 1.0);
      t0 = Clock::now();
      if (r == 0) {
        comm.Allreduce(std::span<double>(v));
      } else {
        comm.Barrier();
      }
    } else if (s == Scenario::kSumVsMax) {
      std::vector<double> v(4, 1.0 + r);
      t0 = Clock::now();
      comm.Allreduce(std::span<double>(v), r == 0 ? comm::ReduceOp::kSum : comm::ReduceOp::kMax);
    } else {
      std::vector<double> v(4, 1.0);
      for (int k = 0; k < kSteps; ++k) comm.Allreduce(std::span<double>(v));
      t0 = Clock::now();
      if (r == 0) {
        comm.Allreduce(std::span<double>(v));
      } else {
        // Alive and silent, the communicator open (a rank evaluating,
        // saving, or waiting on a file).
        std::this_thread::sleep_for(std::chrono::duration<double>(deadline_s + 2));
      }
    }
    out["error"] = "none";
  } catch (const comm::CommError& e) {
    const char* kind = dynamic_cast<const comm::CheckError*>(&e)      ? "CheckError"
                       : dynamic_cast<const comm::DeadlineError*>(&e) ? "DeadlineError"
                       : dynamic_cast<const comm::PeerError*>(&e)     ? "PeerError"
                                                                      : "CommError";
    out["error"] = kind;
    out["message"] = FirstLine(e.what());
    const std::string never = NeverEntered(e.what());
    if (!never.empty()) out["never_entered"] = never;
  }
  out["after_s"] = std::chrono::duration<double>(Clock::now() - t0).count();
  return out;
}

results::Record Measure(const harness::CommonFlags& f, Scenario s, int w) {
  results::Record rec;
  rec.bug = "checked_mode";
  rec.kind = results::Kind::kRepro;
  rec.variant = Name(s);
  rec.backend = f.backend;
  rec.world_size = w;
  rec.config["checked"] = true;
  rec.config["deadline_s"] = f.timeout;
  if (s == Scenario::kUnequalAllgather) rec.config["n"] = static_cast<long long>(kSamples);
  const bool deadline_case = s == Scenario::kExtraStepAlive;
  rec.reference["expected"] = deadline_case
                                  ? "DeadlineError on rank 0 at the deadline, naming who never "
                                    "entered; no error on the others"
                                  : "CheckError on every rank before the engine runs the call";
  harness::WorldOptions wo = f.World(w);
  wo.checked = true;
  const harness::WorldResult world =
      harness::RunWorld(wo, [&](comm::Comm& comm) { return RankBody(comm, s, f.timeout); });
  if (world.rank_values.size() != static_cast<std::size_t>(w) ||
      std::any_of(world.rank_values.begin(), world.rank_values.end(),
                  [](const Json& v) { return v.is_null(); })) {
    rec.verdict = results::Verdict::kError;
    rec.error = world.failure.empty() ? "a rank returned no result" : world.failure;
    return rec;
  }
  std::string outcome;
  int errors = 0, check_errors = 0;
  double slowest = 0;
  bool as_expected = true;
  for (int r = 0; r < w; ++r) {
    const Json& v = world.rank_values[static_cast<std::size_t>(r)];
    const std::string kind = v.at("error").get<std::string>();
    const double after = v.at("after_s").get<double>();
    char buf[64];
    std::snprintf(buf, sizeof buf, " after %.3f s", after);
    outcome += (r ? "; r" : "r") + std::to_string(r) + ": " + kind +
               (kind == "none" ? std::string() : buf);
    if (kind != "none") {
      ++errors;
      slowest = std::max(slowest, after);
    }
    check_errors += kind == "CheckError";
    if (deadline_case) {
      as_expected &= r == 0 ? kind == "DeadlineError" && after >= f.timeout : kind == "none";
    } else {
      as_expected &= kind == "CheckError" && after < f.timeout;
    }
  }
  const Json& r0 = world.rank_values[0];
  rec.measured["ranks_with_error"] = errors;
  rec.measured["check_errors"] = check_errors;
  rec.measured["detect_s_max"] = slowest;
  rec.measured["outcome"] = outcome;
  if (Find(r0, "message")) rec.measured["message_rank0"] = r0.at("message").get<std::string>();
  if (Find(r0, "never_entered")) rec.measured["report_rank0"] = r0.at("never_entered").get<std::string>();
  rec.verdict = as_expected ? results::Verdict::kReproduced : results::Verdict::kNotReproduced;
  return rec;
}

}  // namespace

const char* Name(Scenario s) {
  switch (s) {
    case Scenario::kUnequalAllgather: return "unequal_allgather";
    case Scenario::kAllreduceVsBarrier: return "allreduce_vs_barrier";
    case Scenario::kSumVsMax: return "sum_vs_max";
    case Scenario::kExtraStepAlive: return "extra_step_alive";
  }
  return "?";
}

std::vector<results::Record> RunScenarios(const harness::CommonFlags& f,
                                          const std::vector<int>& worlds) {
  std::vector<results::Record> records;
  for (Scenario s : kAll) {
    for (int w : worlds) {
      std::fprintf(stderr, "checked_vs_detail: %s, W=%d, deadline %g s...\n", Name(s), w,
                   f.timeout);
      records.push_back(Measure(f, s, w));
    }
  }
  return records;
}

}  // namespace ddp::checked_vs_detail

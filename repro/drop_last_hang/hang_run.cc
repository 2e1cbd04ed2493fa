#include "repro/drop_last_hang/hang_run.h"

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <thread>

#include "core/comm/errors.h"
#include "core/comm/make_comm.h"
#include "core/device/device_allreduce.h"
#include "core/exact/replica.h"
#include "core/launch/spawn.h"
#include "core/store/store.h"

namespace ddp::drop_last_hang {
namespace {

using results::Json;
using Clock = std::chrono::steady_clock;

constexpr char kMarker[] = "@@hang ";
// DDP's gradient allreduce in RankMain: the line every desync report names (asserted below).
constexpr int kGradientAllreduceLine = 79;

void Emit(const Json& j) {
  std::printf("%s%s\n", kMarker, Dump(j).c_str());
  std::fflush(stdout);
}

FailureReport Failure(const char* kind, const comm::FailureContext& ctx, int64_t step,
                      const std::string& message) {
  FailureReport r;
  r.kind = kind;
  r.rank = ctx.rank;
  r.step = step;
  r.seq = ctx.seq;
  r.op = comm::Name(ctx.op);
  r.elapsed_s = ctx.elapsed.count() / 1000.0;
  r.deadline_s = ctx.deadline.count() / 1000.0;
  r.message = message.substr(0, message.find('\n'));
  r.verdict = ctx.verdict;
  r.mismatch_class = ctx.mismatch_class;
  r.report = ctx.report;
  return r;
}

// Out of band (no collective): wait until every rank has finished; the supervisor bounds it.
void WaitForJobEnd(const launch::RankEnv& env) {
  auto store = store::PrefixedStore(store::OpenStore(env.rdzv), env.run_id + "/job_end");
  store->Put("finished/" + std::to_string(env.rank), "1");
  for (;;) {
    int done = 0;
    for (int r = 0; r < env.world_size; ++r) {
      done += store->TryGet("finished/" + std::to_string(r)).has_value();
    }
    if (done == env.world_size) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int RankMain(const launch::RankEnv& env, const Config& c, const HangOptions& o) {
  comm::CommOptions co = comm::OptionsFromRankEnv(env);
  co.backend = o.backend;
  co.timeout = std::chrono::milliseconds(static_cast<long long>(o.collective_deadline_s * 1000));
  co.checked = false;  // raw: what the engine does with an unmatched call
  auto comm = comm::MakeComm(co);
  const auto dev = device::MakeDevice<double>(o.device, device::kDeviceFlag);  // after the Comm: it set the GPU
  auto ds = MakeDataset(c);
  const Batches batches = RankBatches(c, env.rank);
  replica::Replica model(ModelOptions(*ds, c));
  int64_t step = 0;
  try {
    for (; step < static_cast<int64_t>(batches.size()); ++step) {
      const replica::LocalGradient g = model.Gradient(data::Materialize(*ds, batches[step]));
      std::vector<double> buf(g.grad.data(), g.grad.data() + g.grad.size());
      device::AllreduceOnDevice(*comm, dev.get(), std::span<double>(buf), device::CopyKind::kParameter);
      static_assert(__LINE__ - 1 == kGradientAllreduceLine, "kGradientAllreduceLine: the line above");
      model.Apply(Eigen::Map<Eigen::VectorXd>(buf.data(), g.grad.size()) / comm->world_size());
    }
  } catch (const comm::DeadlineError& e) {
    Emit(Json(Failure("deadline", e.context(), step, e.what())));
    return 3;
  } catch (const comm::PeerError& e) {
    Emit(Json(Failure("peer", e.context(), step, e.what())));
    return 3;
  }
  const int64_t collectives = comm->next_seq();
  comm->Finish();
  FinishedReport finished;
  finished.rank = env.rank;
  finished.steps = step;
  finished.collectives = collectives;
  if (dev) finished.device_copies = device::ToJson(dev->copies());
  Emit(Json(finished));
  if (o.early == EarlyRanks::kWaitForJob) WaitForJobEnd(env);
  return 0;
}

bool Exists(pid_t pid) {
  errno = 0;
  const bool process = ::kill(pid, 0) == 0 || errno != ESRCH;
  errno = 0;
  const bool group = ::kill(-pid, 0) == 0 || errno != ESRCH;
  return process || group;
}

}  // namespace

HangRun RunTrainingWorld(const Config& c, const HangOptions& o) {
  launch::SpawnOptions so;
  so.deadline = std::chrono::milliseconds(static_cast<long long>(o.world_deadline_s * 1000));
  so.backend = o.backend;
  so.share_gpu = o.share_gpu;
  so.fail_fast = true;  // as torchrun: one failed rank stops the job
  so.forward_signals = o.forward_signals;
  so.run_id = "drop_last_hang";
  HangRun out;
  out.run = launch::SpawnRanks(
      c.world_size, [&](const launch::RankEnv& env) { return RankMain(env, c, o); }, so);
  for (const auto& rank : out.run.ranks) {
    out.finished.emplace_back();
    out.failed.emplace_back();
    const auto pos = rank.stdout_text.rfind(kMarker);
    if (pos != std::string::npos) {
      const auto start = pos + sizeof(kMarker) - 1;
      const auto end = rank.stdout_text.find('\n', start);
      const Json line = results::ParseJson(rank.stdout_text.substr(
          start, end == std::string::npos ? std::string::npos : end - start));
      // Its "kind" says which of the two reports the line is.
      if (line.at("kind").get<std::string>() == "finished") {
        out.finished.back() = line.get<FinishedReport>();
      } else {
        out.failed.back() = line.get<FailureReport>();
      }
    }
    out.left_behind.push_back(Exists(rank.pid));
  }
  return out;
}

int GradientAllreduceLine() { return kGradientAllreduceLine; }

std::vector<std::string> PositionLines(const std::string& report) {
  std::vector<std::string> lines;
  std::istringstream in(report);
  std::string line;
  while (std::getline(in, line)) {
    // "  rank 0: ...", "  ranks [1, 2, 3]: ...", "  no dump from ...": indented by two.
    if (line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') lines.push_back(line.substr(2));
  }
  return lines;
}

}  // namespace ddp::drop_last_hang

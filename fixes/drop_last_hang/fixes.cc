#include "fixes/drop_last_hang/fixes.h"

#include <algorithm>
#include <span>
#include <stdexcept>

#include "core/device/device_allreduce.h"

namespace ddp::drop_last_hang {

const char* Name(Fix f) {
  switch (f) {
    case Fix::kDropLast: return "drop_last";
    case Fix::kEvenBatches: return "even_batches";
    case Fix::kJoin: return "join";
    case Fix::kJoinInitialWorldSize: return "join_initial_world_size";
  }
  return "?";
}

const char* TorchCounterpart(Fix f) {
  switch (f) {
    case Fix::kDropLast: return "DistributedSampler(drop_last=True), DataLoader(drop_last=True)";
    case Fix::kEvenBatches: return "a sampler padding every rank to the same number of batches";
    case Fix::kJoin: return "Join([ddp_model], divide_by_initial_world_size=False)";
    case Fix::kJoinInitialWorldSize: return "Join([ddp_model]) (default: divide_by_initial_world_size=True)";
  }
  return "?";
}

bool IsJoin(Fix f) { return f == Fix::kJoin || f == Fix::kJoinInitialWorldSize; }

namespace {

Config Effective(Fix fix, Config c) {
  if (fix == Fix::kDropLast) c.drop_last = true;
  return c;
}

int64_t MaxBatches(const Config& c) {
  int64_t m = 0;
  for (int r = 0; r < c.world_size; ++r) m = std::max<int64_t>(m, RankBatches(c, r).size());
  return m;
}

// Step s of every rank (an empty batch where a rank has run out).
std::vector<data::Batch> StepBatches(const data::Dataset& ds, const std::vector<Batches>& all,
                                     std::size_t s) {
  std::vector<data::Batch> out;
  for (const Batches& b : all) out.push_back(s < b.size() ? data::Materialize(ds, b[s]) : data::Batch{});
  return out;
}

std::size_t Longest(const std::vector<Batches>& all) {
  std::size_t longest = 0;
  for (const Batches& b : all) longest = std::max(longest, b.size());
  return longest;
}

}  // namespace

Batches FixedBatches(Fix fix, const Config& c, int rank, int64_t max_batches) {
  Batches own = RankBatches(Effective(fix, c), rank);
  if (fix != Fix::kEvenBatches) return own;
  if (own.empty() && max_batches > 0) {
    throw std::runtime_error("even_batches: rank " + std::to_string(rank) +
                             " has no batch to repeat");
  }
  const std::size_t k = own.size();
  for (std::size_t i = k; i < static_cast<std::size_t>(max_batches); ++i) own.push_back(own[i % k]);
  return own;
}

std::vector<Batches> AllFixedBatches(Fix fix, const Config& c) {
  const int64_t max_batches = fix == Fix::kEvenBatches ? MaxBatches(Effective(fix, c)) : 0;
  std::vector<Batches> all;
  for (int r = 0; r < c.world_size; ++r) all.push_back(FixedBatches(fix, c, r, max_batches));
  return all;
}

RankRun TrainWithFix(comm::Comm& comm, Fix fix, const Config& c, device::Device<double>* device) {
  const Config e = Effective(fix, c);
  auto ds = MakeDataset(e);
  replica::Replica model(ModelOptions(*ds, e));
  replica::Replica scratch(ModelOptions(*ds, e));  // the one-process step's model
  const std::vector<Batches> all = AllFixedBatches(fix, c);
  const std::size_t p = static_cast<std::size_t>(model.NumParams());
  Batches mine = RankBatches(e, comm.rank());
  if (fix == Fix::kEvenBatches) {
    std::vector<int64_t> count = {static_cast<int64_t>(mine.size())};
    comm.Allreduce(std::span<int64_t>(count), comm::ReduceOp::kMax);
    mine = FixedBatches(fix, c, comm.rank(), count[0]);
  }
  RankRun run;
  run.contributors_min = comm.world_size();
  for (std::size_t s = 0;; ++s) {
    const bool has_data = s < mine.size();
    int contributors = comm.world_size();
    if (IsJoin(fix)) {
      std::vector<int64_t> flag = {has_data ? 1 : 0};
      comm.Allreduce(std::span<int64_t>(flag));
      if (flag[0] == 0) break;  // everyone is out of data: all stop together
      contributors = static_cast<int>(flag[0]);
    } else if (!has_data) {
      break;  // equal counts by construction: every rank stops here
    }
    const replica::ReplicaState before = model.State();
    const data::Batch batch = has_data ? data::Materialize(*ds, mine[s]) : data::Batch{};
    const replica::LocalGradient g = model.Gradient(batch);  // zeros when no data
    std::vector<double> buf(g.grad.data(), g.grad.data() + p);
    device::AllreduceOnDevice(comm, device, std::span<double>(buf), device::CopyKind::kParameter);
    const int divisor = fix == Fix::kJoinInitialWorldSize ? comm.world_size() : contributors;
    const Eigen::VectorXd average =
        Eigen::Map<const Eigen::VectorXd>(buf.data(), static_cast<Eigen::Index>(p)) / divisor;
    model.Apply(average);
    const replica::OneProcessStep reference =
        replica::StepInOneProcess(scratch, before, StepBatches(*ds, all, s), comm.rank());
    replica::CompareStep(run.check, static_cast<int64_t>(s), average, contributors, model.State(),
                         reference);
    run.contributors_min = std::min(run.contributors_min, contributors);
    ++run.steps;
  }
  run.final_params = model.Params();
  return run;
}

SerialRun SerialReference(Fix fix, const Config& c) {
  const Config e = Effective(fix, c);
  auto ds = MakeDataset(e);
  replica::Replica model(ModelOptions(*ds, e));
  const std::vector<Batches> all = AllFixedBatches(fix, c);
  SerialRun run;
  for (std::size_t s = 0; s < Longest(all); ++s) {
    // The model is its own scratch: it ends the call in the stepped state.
    replica::StepInOneProcess(model, model.State(), StepBatches(*ds, all, s), 0);
    ++run.steps;
  }
  run.final_params = model.Params();
  return run;
}

}  // namespace ddp::drop_last_hang

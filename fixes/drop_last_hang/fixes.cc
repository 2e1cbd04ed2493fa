#include "fixes/drop_last_hang/fixes.h"

#include <algorithm>
#include <span>
#include <stdexcept>

namespace ddp::drop_last_hang {

const char* Name(Fix f) {
  switch (f) {
    case Fix::kDropLast: return "drop_last";
    case Fix::kEvenBatches: return "even_batches";
    case Fix::kJoin: return "join";
  }
  return "?";
}

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

Eigen::VectorXd ToVector(const std::vector<double>& v, std::size_t n) {
  return Eigen::Map<const Eigen::VectorXd>(v.data(), static_cast<Eigen::Index>(n));
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

std::vector<StepResult> TrainWithFix(comm::Comm& comm, Fix fix, const Config& c) {
  const Config e = Effective(fix, c);
  auto ds = MakeDataset(e);
  replica::Replica model(ModelOptions(*ds, e));
  const std::size_t p = static_cast<std::size_t>(model.NumParams());
  int64_t max_batches = 0;
  Batches mine = RankBatches(e, comm.rank());
  if (fix == Fix::kEvenBatches) {
    std::vector<int64_t> count = {static_cast<int64_t>(mine.size())};
    comm.Allreduce(std::span<int64_t>(count), comm::ReduceOp::kMax);
    max_batches = count[0];
    mine = FixedBatches(fix, c, comm.rank(), max_batches);
  }
  std::vector<StepResult> steps;
  for (std::size_t s = 0;; ++s) {
    const bool has_data = s < mine.size();
    int contributors = comm.world_size();
    if (fix == Fix::kJoin) {
      std::vector<int64_t> flag = {has_data ? 1 : 0};
      comm.Allreduce(std::span<int64_t>(flag));
      if (flag[0] == 0) break;  // everyone is out of data: all stop together
      contributors = static_cast<int>(flag[0]);
    } else if (!has_data) {
      break;  // equal counts by construction: every rank stops here
    }
    const data::Batch batch = has_data ? data::Materialize(*ds, mine[s]) : data::Batch{};
    const replica::LocalGradient g = model.Gradient(batch);  // zeros when no data
    std::vector<double> buf(g.grad.data(), g.grad.data() + p);
    comm.Allreduce(std::span<double>(buf));
    StepResult r;
    r.average = ToVector(buf, p) / contributors;
    r.contributors = contributors;
    model.Apply(r.average);
    steps.push_back(std::move(r));
  }
  return steps;
}

std::vector<StepResult> SerialReference(Fix fix, const Config& c) {
  const Config e = Effective(fix, c);
  auto ds = MakeDataset(e);
  replica::Replica model(ModelOptions(*ds, e));
  const int64_t max_batches = fix == Fix::kEvenBatches ? MaxBatches(e) : 0;
  std::vector<Batches> all;
  std::size_t longest = 0;
  for (int r = 0; r < c.world_size; ++r) {
    all.push_back(FixedBatches(fix, c, r, max_batches));
    longest = std::max(longest, all.back().size());
  }
  std::vector<StepResult> steps;
  for (std::size_t s = 0; s < longest; ++s) {
    StepResult r;
    r.average = Eigen::VectorXd::Zero(model.NumParams());
    for (const Batches& b : all) {
      if (s >= b.size()) continue;
      r.average += model.Gradient(data::Materialize(*ds, b[s])).grad;
      ++r.contributors;
    }
    r.average /= r.contributors;
    model.Apply(r.average);
    steps.push_back(std::move(r));
  }
  return steps;
}

}  // namespace ddp::drop_last_hang

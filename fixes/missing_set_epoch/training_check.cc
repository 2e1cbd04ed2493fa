#include "fixes/missing_set_epoch/training_check.h"

#include <algorithm>
#include <memory>

#include "core/data/synthetic.h"
#include "core/exact/replica.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {
namespace {

std::shared_ptr<const data::GaussianBinary> TrainSet(const TrainConfig& c) {
  return std::make_shared<const data::GaussianBinary>(data::GaussianBinaryConfig{
      .size = c.order.n, .seed = static_cast<uint64_t>(c.order.seed)});
}

replica::ReplicaOptions Options(const data::Dataset& ds, const TrainConfig& c) {
  return {.in_features = ds.FeatureDim(),
          .norm = c.norm,
          .init_seed = static_cast<uint64_t>(c.order.seed),
          .lr = c.lr,
          .momentum = c.momentum};
}

std::vector<data::Batch> Materialize(const data::Dataset& ds,
                                     const std::vector<std::vector<int64_t>>& lists) {
  std::vector<data::Batch> out;
  for (const auto& l : lists) out.push_back(l.empty() ? data::Batch{} : data::Materialize(ds, l));
  return out;
}

}  // namespace

replica::Norm NormFor(int64_t n, int world_size, int batch_size) {
  const int64_t per_rank = (n + world_size - 1) / world_size;
  return batch_size == 1 || per_rank % batch_size == 1 ? replica::Norm::kGroupNorm
                                                       : replica::Norm::kBatchNorm;
}

int64_t StepsPerEpoch(const TrainConfig& c) {
  const int64_t per_rank = (c.order.n + c.order.world_size - 1) / c.order.world_size;
  return (per_rank + c.batch_size - 1) / c.batch_size;
}

std::vector<std::vector<int64_t>> OneProcessStep(const TrainConfig& c,
                                                 const std::vector<int64_t>& order, int64_t step) {
  const int w = c.order.world_size;
  const int64_t per_rank = static_cast<int64_t>(order.size()) / w;
  std::vector<std::vector<int64_t>> out(static_cast<std::size_t>(w));
  for (int r = 0; r < w; ++r) {
    for (int64_t j = step * c.batch_size; j < std::min(per_rank, (step + 1) * c.batch_size); ++j) {
      out[static_cast<std::size_t>(r)].push_back(order[static_cast<std::size_t>(j * w + r)]);
    }
  }
  return out;
}

TrainingCheck TrainAndCheck(comm::Comm& comm, const TrainConfig& c, Mode mode) {
  auto ds = TrainSet(c);
  replica::Replica scratch(Options(*ds, c));
  TrainingCheck out;
  int order_epoch = -1;
  std::vector<int64_t> order;
  out.device_copies = Train(comm, mode, c, [&](const StepView& v) {
    if (v.epoch != order_epoch) {
      order = OneProcessOrder(c.order, v.epoch);
      order_epoch = v.epoch;
    }
    const replica::OneProcessStep reference = replica::StepInOneProcess(
        scratch, v.before, Materialize(*ds, OneProcessStep(c, order, v.step_in_epoch)),
        comm.rank());
    replica::CompareStep(out.check, v.step, v.applied, comm.world_size(), v.model.State(),
                         reference);
    ++out.steps;
    out.final_params = v.model.Params();
  }).device_copies;
  return out;
}

Eigen::VectorXd OneProcessTraining(const TrainConfig& c) {
  auto ds = TrainSet(c);
  replica::Replica model(Options(*ds, c));
  for (int epoch = 0; epoch < c.order.epochs; ++epoch) {
    const std::vector<int64_t> order = OneProcessOrder(c.order, epoch);
    for (int64_t s = 0; s < StepsPerEpoch(c); ++s) {
      // The model is its own scratch: it ends the call in the stepped state
      // (running statistics: rank 0's micro-batch's, as on rank 0).
      replica::StepInOneProcess(model, model.State(),
                                Materialize(*ds, OneProcessStep(c, order, s)), 0);
    }
  }
  return model.Params();
}

}  // namespace ddp::missing_set_epoch

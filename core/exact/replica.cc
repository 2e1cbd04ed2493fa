#include "core/exact/replica.h"

#include <limits>
#include <span>

#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "core/nn/loss.h"
#include "core/nn/param.h"

namespace ddp::replica {

Replica::Replica(const ReplicaOptions& o)
    : model_(nn::MlpOptions{.in_features = o.in_features, .hidden = o.hidden, .seed = o.init_seed},
             o.norm == Norm::kGroupNorm ? nn::GroupNormFactory<double>(4)
                                        : nn::BatchNormFactory<double>()) {
  sgd_ = std::make_unique<nn::Sgd<double>>(
      model_.Params(), nn::SgdOptions{.lr = o.lr, .momentum = o.momentum, .weight_decay = 0});
  num_params_ = nn::NumElements(model_.Params());
}

nn::Matrix<double> Targets(const data::Batch& batch) {
  nn::Matrix<double> t(static_cast<Eigen::Index>(batch.labels.size()), 1);
  for (std::size_t i = 0; i < batch.labels.size(); ++i) t(static_cast<Eigen::Index>(i), 0) = batch.labels[i];
  return t;
}

LocalGradient Replica::Gradient(const data::Batch& batch) {
  LocalGradient g;
  if (batch.indices.empty()) {
    g.grad = Eigen::VectorXd::Zero(num_params_);
    return g;
  }
  const auto params = model_.Params();
  nn::ZeroGrads(params);
  const nn::Matrix<double> x = batch.x;
  const nn::Matrix<double> logits = model_.Forward(x);
  const auto lg = nn::BceWithLogits(logits, Targets(batch));
  model_.Backward(lg.grad);
  g.grad = nn::FlattenGrads(params);
  g.count = static_cast<int64_t>(batch.indices.size());
  g.loss_sum = lg.loss * static_cast<double>(g.count);
  return g;
}

void Replica::Apply(const Eigen::VectorXd& average) {
  nn::UnflattenGrads(average, model_.Params());
  sgd_->Step();
}

Evaluation Replica::Evaluate(const data::Batch& batch) {
  model_.SetTraining(false);
  const nn::Matrix<double> logits = model_.Forward(nn::Matrix<double>(batch.x));
  model_.SetTraining(true);
  const auto lg = nn::BceWithLogits(logits, Targets(batch));
  int64_t correct = 0;
  for (Eigen::Index i = 0; i < logits.rows(); ++i) {
    correct += (logits(i, 0) > 0) == (batch.labels[static_cast<std::size_t>(i)] == 1);
  }
  return {lg.loss, static_cast<double>(correct) / static_cast<double>(logits.rows())};
}

Eigen::VectorXd Replica::Params() { return nn::FlattenValues(model_.Params()); }

ReplicaState Replica::State() {
  return {Params(), sgd_->FlattenMomentum(), nn::FlattenBuffers(model_.Buffers())};
}

void Replica::SetState(const ReplicaState& state) {
  nn::UnflattenValues(state.params, model_.Params());
  sgd_->LoadMomentum(state.momentum);
  SetBuffers(state.buffers);
}

void Replica::SetBuffers(const Eigen::VectorXd& buffers) {
  nn::UnflattenBuffers(buffers, model_.Buffers());
}

OneProcessStep StepInOneProcess(Replica& scratch, const ReplicaState& from,
                                const std::vector<data::Batch>& rank_batches, int rank) {
  scratch.SetState(from);
  OneProcessStep out;
  out.average = Eigen::VectorXd::Zero(scratch.NumParams());
  Eigen::VectorXd rank_buffers = from.buffers;
  for (std::size_t r = 0; r < rank_batches.size(); ++r) {
    if (rank_batches[r].indices.empty()) continue;
    scratch.SetBuffers(from.buffers);  // each rank's statistics start from the same state
    out.average += scratch.Gradient(rank_batches[r]).grad;
    ++out.contributors;
    if (static_cast<int>(r) == rank) rank_buffers = scratch.State().buffers;
  }
  if (out.contributors > 0) out.average /= out.contributors;
  scratch.SetBuffers(rank_buffers);
  scratch.Apply(out.average);
  out.after = scratch.State();
  return out;
}

void CompareStep(exact::StepCheck& check, int64_t step, const Eigen::VectorXd& applied,
                 int contributors, const ReplicaState& after, const OneProcessStep& reference) {
  auto span = [](const Eigen::VectorXd& v) {
    return std::span<const double>(v.data(), static_cast<std::size_t>(v.size()));
  };
  check.Compare("grad", step, span(applied), span(reference.average));
  check.Compare("param", step, span(after.params), span(reference.after.params));
  check.Compare("momentum", step, span(after.momentum), span(reference.after.momentum));
  if (after.buffers.size() > 0 || reference.after.buffers.size() > 0) {
    check.Compare("buffers", step, span(after.buffers), span(reference.after.buffers));
  }
  check.Add("contributors", step,
            contributors == reference.contributors ? 0.0
                                                   : std::numeric_limits<double>::infinity());
}

}  // namespace ddp::replica

// One data-parallel replica of the Gaussian-task MLP, as DDP trains it:
// every rank holds an identical copy, computes the gradient of its own
// batch, the gradients are averaged across ranks (by the caller, through the
// engine), and every copy applies the same average with SGD. Shared by
// missing_set_epoch (training curves) and drop_last_hang (the training loop
// whose extra step hangs, and its fixes' exactness checks).
//
// The model is core/nn's Mlp in double with local BatchNorm (DDP's default:
// batch statistics per rank, no SyncBN) or GroupNorm. Evaluation uses this replica's own
// running statistics, which is what evaluating on rank 0 of a DDP job does
// (DDP broadcasts rank 0's buffers, so rank 0's are the ones that persist).
#pragma once

#include <cstdint>
#include <memory>

#include "Eigen/Core"
#include "core/data/dataset.h"
#include "core/nn/models.h"
#include "core/nn/sgd.h"

namespace ddp::replica {

enum class Norm { kBatchNorm, kGroupNorm };

struct ReplicaOptions {
  int in_features = 8;
  // BatchNorm (DDP's usual local BN) or GroupNorm(4 groups), which also
  // trains on a batch of one sample: with BatchNorm such a batch raises
  // "expected more than 1 value per channel when training", as in PyTorch.
  Norm norm = Norm::kBatchNorm;
  int hidden = 16;
  uint64_t init_seed = 0;  // the same on every rank, as DDP's initial broadcast ensures
  double lr = 0.05;
  double momentum = 0.9;
};

struct LocalGradient {
  Eigen::VectorXd grad;  // d(mean loss over this batch)/d(params), flattened
  double loss_sum = 0;   // sum of per-sample losses (mean loss x batch size)
  int64_t count = 0;     // samples in the batch
};

struct Evaluation {
  double loss = 0;      // mean BCE over the set
  double accuracy = 0;  // fraction with (logit > 0) == label
};

class Replica {
 public:
  explicit Replica(const ReplicaOptions& options);

  int64_t NumParams() const { return num_params_; }
  // Gradient of the mean BCE loss over `batch` at the current parameters.
  // An empty batch has no gradient: zeros, loss 0, count 0 (what a rank
  // with no data contributes under a join protocol).
  LocalGradient Gradient(const data::Batch& batch);
  // Writes `average` into the parameters' gradients and takes one SGD step.
  void Apply(const Eigen::VectorXd& average);
  // Eval mode (running statistics); restores training mode afterwards.
  Evaluation Evaluate(const data::Batch& batch);
  Eigen::VectorXd Params();

 private:
  nn::Mlp<double> model_;
  std::unique_ptr<nn::Sgd<double>> sgd_;
  int64_t num_params_ = 0;
};

// Labels as the N x 1 target matrix of BceWithLogits.
nn::Matrix<double> Targets(const data::Batch& batch);

}  // namespace ddp::replica

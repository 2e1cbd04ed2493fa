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
#include <vector>

#include "Eigen/Core"
#include "core/data/dataset.h"
#include "core/exact/step_check.h"
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

// Everything a replica's next step depends on and changes: the parameters,
// SGD's momentum (empty before the first step) and the norm layers' running
// statistics (empty with GroupNorm, which keeps none).
struct ReplicaState {
  Eigen::VectorXd params;
  Eigen::VectorXd momentum;
  Eigen::VectorXd buffers;
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
  ReplicaState State();
  // Throws std::invalid_argument when a part has the wrong size.
  void SetState(const ReplicaState& state);
  void SetBuffers(const Eigen::VectorXd& buffers);

 private:
  nn::Mlp<double> model_;
  std::unique_ptr<nn::Sgd<double>> sgd_;
  int64_t num_params_ = 0;
};

// One DDP step done in one process: the reference of the fixes' per-step
// exactness checks (core/exact/step_check.h). From `from`, the gradient of
// every rank's batch at the same parameters (an empty batch contributes
// nothing: a rank out of data), their mean over the ranks that had data, one
// SGD step. `after.buffers` are rank `rank`'s running statistics: its own
// batch's forward from `from.buffers` (local BatchNorm: each rank updates
// its statistics from its own batch only). `scratch` is overwritten.
struct OneProcessStep {
  Eigen::VectorXd average;
  int contributors = 0;
  ReplicaState after;
};
OneProcessStep StepInOneProcess(Replica& scratch, const ReplicaState& from,
                                const std::vector<data::Batch>& rank_batches, int rank);

// Feeds one step into `check`: "grad" (the averaged gradient the rank
// applied vs the reference mean), "param", "momentum" and, when the model
// has running statistics, "buffers" (the rank's state after the step vs
// the reference's), and "contributors" (0 when the counts agree, else inf).
void CompareStep(exact::StepCheck& check, int64_t step, const Eigen::VectorXd& applied,
                 int contributors, const ReplicaState& after, const OneProcessStep& reference);

// Labels as the N x 1 target matrix of BceWithLogits.
nn::Matrix<double> Targets(const data::Batch& batch);

}  // namespace ddp::replica

// DDP training of the Gaussian-task MLP under one sampling mode
// (scenario.h), run on every rank of a world: what the missing set_epoch
// does to the loss and accuracy curves.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/comm/comm.h"
#include "core/device/make_device.h"
#include "core/exact/replica.h"
#include "core/results/json.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {

struct TrainConfig {
  OrderConfig order;   // n, world_size, seed (data, init and sampler), epochs
  int batch_size = 32;
  double lr = 0.05;
  double momentum = 0.9;
  int64_t test_size = 2000;  // held-out set, its own seed
  // Local BatchNorm (DDP's default); GroupNorm where a batch of one sample
  // would make BatchNorm refuse to train.
  replica::Norm norm = replica::Norm::kBatchNorm;
  // Where DDP's gradient all-reduce runs (resolved --device; host: a host
  // buffer, as before; core/device/device_allreduce.h).
  device::Placement device = device::Placement::kHost;
};

// What one training step did on this rank: the state it started from, the
// averaged gradient it applied, and the model after the step.
struct StepView {
  int epoch = 0;
  int64_t step_in_epoch = 0;
  int64_t step = 0;  // counted over all epochs
  const replica::ReplicaState& before;
  const Eigen::VectorXd& applied;
  replica::Replica& model;
};
// Called after every step (the fix's per-step exactness check).
using StepObserver = std::function<void(const StepView&)>;

struct Curves {
  std::vector<double> train_loss;     // per epoch: mean loss over all samples the ranks trained on
  std::vector<double> test_loss;      // per epoch: rank 0's model on the held-out set
  std::vector<double> test_accuracy;
  // Rank-local: true when this rank's index list was the same in every
  // epoch (the symptom, observed inside the training loop).
  bool same_order_every_epoch = false;
  int64_t collectives = 0;
  // This rank's host<->device copies in step 0 (copy_json.h); null on the host.
  results::Json device_copies;
};

// Every rank calls this with the same config; one allreduce per step
// (gradients, with the loss sum and sample count appended).
Curves Train(comm::Comm& comm, Mode mode, const TrainConfig& config,
             const StepObserver& observer = {});

}  // namespace ddp::missing_set_epoch

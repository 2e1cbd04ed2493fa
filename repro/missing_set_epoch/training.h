// DDP training of the Gaussian-task MLP under one sampling mode
// (scenario.h), run on every rank of a world: what the missing set_epoch
// does to the loss and accuracy curves.
#pragma once

#include <cstdint>
#include <vector>

#include "core/comm/comm.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {

struct TrainConfig {
  OrderConfig order;   // n, world_size, seed (data, init and sampler), epochs
  int batch_size = 32;
  double lr = 0.05;
  double momentum = 0.9;
  int64_t test_size = 2000;  // held-out set, its own seed
};

struct Curves {
  std::vector<double> train_loss;     // per epoch: mean loss over all samples the ranks trained on
  std::vector<double> test_loss;      // per epoch: rank 0's model on the held-out set
  std::vector<double> test_accuracy;
  // Rank-local: true when this rank's index list was the same in every
  // epoch (the symptom, observed inside the training loop).
  bool same_order_every_epoch = false;
  int64_t collectives = 0;
};

// Every rank calls this with the same config; one allreduce per step
// (gradients, with the loss sum and sample count appended).
Curves Train(comm::Comm& comm, Mode mode, const TrainConfig& config);

}  // namespace ddp::missing_set_epoch

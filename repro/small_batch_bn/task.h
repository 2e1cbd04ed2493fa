// The small-batch BatchNorm task and the pieces every training loop of this
// pair is built from: the images, the model with a chosen norm, one
// forward/backward, DDP's gradient average and buffer broadcast, and
// PreciseBN's statistics. training.cc composes them into a training run;
// fixes/small_batch_bn/step_exact.cc into the per-step exactness check.
//
// Tasks (README.md argues the choice):
//  - kDigits (default): the UCI optical digits (core/data/digits.h), 1297
//    training / 500 validation images (a fixed torch.randperm split), pixels
//    in [0, 1] plus Gaussian noise of sd `noise`: drawn afresh every epoch
//    for the training images (noise as augmentation: the model never sees
//    the same noisy image twice), fixed for the validation images. 10 classes.
//  - kTinyImages: core/data's synthetic 3x8x8 stripes/checkerboard images (4
//    classes), the task of this pair's first version: the counter-example on
//    which small per-rank batches do no visible damage.
// Model: nn::TinyCnn (conv3x3-norm-ReLU, conv3x3/2-norm-ReLU, global average
// pool, linear), double, initialised from the run's seed. Its norm layers
// compute where the placement says (core/device/make_device.h): by default on
// the GPU under --backend nccl (core/device's layers, the SyncBN collectives
// on device buffers), else with core/nn's Eigen; the rest of the network is
// Eigen on the host either way, so each norm layer's input and output cross
// between host and device (counted: device_copies()). The same device carries
// DDP's gradient all-reduces and PreciseBN's metric all-reduce
// (core/device/device_allreduce.h): one placement, one device per rank.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/comm/comm.h"
#include "core/device/device.h"
#include "core/device/make_device.h"
#include "core/nn/batch_norm.h"
#include "core/nn/models.h"
#include "core/nn/tensor.h"
#include "core/results/json.h"

namespace ddp::small_batch_bn {

struct SyncBnTraffic;  // fixes/small_batch_bn/sync_batch_norm.h

enum class Task { kDigits, kTinyImages };
enum class NormKind { kBatchNorm, kSyncBatchNorm, kGroupNorm };

const char* ToString(Task t);
const char* ToString(NormKind k);

struct TaskConfig {
  Task task = Task::kDigits;
  int64_t n_val = 500;       // digits: validation images (the rest train); tiny images: each split's size
  int64_t n_train_tiny = 1297;
  double noise = 0.3;        // digits: pixel noise sd
  // digits: false draws the training noise once (epoch 0's) and shows the
  // same noisy images every epoch: the augmentation turned off.
  bool fresh_noise = true;
  uint64_t seed = 0;         // the run's seed: training noise and (with the model) initialisation
};

struct Images {
  nn::Tensor4<double> x;  // N x C x H x W
  std::vector<int> labels;
  int64_t size() const { return x.n; }
};

// The training images as seen in `epoch` (digits: that epoch's noise).
Images TrainImages(const TaskConfig& c, int epoch);
// The validation images (the same in every run and epoch).
Images ValImages(const TaskConfig& c);
// Rows `idx` of `all`, in that order (an empty idx gives an empty batch).
Images Take(const Images& all, std::span<const int64_t> idx);
// Concatenation in order (what one process sees for the ranks' batches).
Images Concat(std::span<const Images> parts);

int Channels(Task t);
int Classes(Task t);

// TinyCnn whose two norm layers are recorded for the measurements.
class Model {
 public:
  // comm is used by SyncBatchNorm's collectives and must outlive the model;
  // nullptr builds plain BatchNorm for kSyncBatchNorm (one process: a
  // BatchNorm over the whole batch is what SyncBatchNorm computes).
  // traffic (optional) counts SyncBatchNorm's collectives. placement:
  // where the norm layers compute; kAuto resolves against comm's backend
  // (no comm: the host).
  Model(Task task, NormKind norm, uint64_t seed, comm::Comm* comm, int gn_groups = 4,
        SyncBnTraffic* traffic = nullptr, device::Placement placement = device::Placement::kAuto);

  nn::TinyCnn<double>& net() { return *net_; }
  nn::ParamList<double> Params() { return net_->Params(); }
  nn::BufferList<double> Buffers() { return net_->Buffers(); }
  // Layer l (0, 1) as a BatchNorm (on the host or a device), or nullptr (GroupNorm).
  nn::BatchNormLayer<double>* bn(int l);
  nn::NormLayer<double>& norm(int l);
  NormKind kind() const { return kind_; }
  // Where the norm layers compute: kHost, kEmulated or kCuda.
  device::Placement placement() const { return placement_; }
  // Every host<->device copy of the norm layers so far (zero on the host).
  device::CopyCount device_copies() const { return device_ ? device_->copies() : device::CopyCount{}; }
  // The norm layers' device, which DDP's double all-reduces of this model
  // also use (AverageGradients & co.); null on the host.
  device::Device<double>* device() const { return device_.get(); }

  // Start / stop merging the statistics of each norm layer's inputs.
  void StartProbe();
  std::vector<nn::ChannelStats<double>> StopProbe();

 private:
  NormKind kind_;
  device::Placement placement_;
  std::unique_ptr<device::Device<double>> device_;  // null on the host; outlives the layers
  std::unique_ptr<nn::TinyCnn<double>> net_;
  std::vector<class ProbeNorm*> probes_;
};

// What a model's step copied between host and device memory, from
// construction to the calls below: the model device's copies (the norm
// layers' and, on a device, the gradient all-reduce's upload and download)
// and what the Comm staged through device memory for host buffers (NCCL;
// none on Gloo, and none for the double all-reduces on a device). Per rank; the records carry them as measured.device_copies and
// measured.comm_staging.
class StepCopies {
 public:
  StepCopies(comm::Comm& comm, const Model& m);
  // core/device/copy_json.h's object; null when the layers ran on the host.
  results::Json Layers() const;
  // {"h2d": {"calls", "bytes"}, "d2h": {"calls", "bytes"}}.
  results::Json Staging() const;

 private:
  comm::Comm& comm_;
  const Model& m_;
  device::CopyCount layers_;
  comm::Comm::StagedCopies staged_;
};

// Training forward + backward of one (micro-)batch in train mode; the
// parameter gradients accumulate d(loss_scale * mean loss)/dθ. An empty batch
// still runs the layers (a SyncBatchNorm rank with no samples joins the
// collectives with count 0) and adds nothing. Returns the mean loss (0 when
// empty). norm_training = false: the norm layers run in eval mode (TinyCnn's
// only mode-dependent layers, so this is also model.eval() while training).
double ForwardBackward(Model& m, const Images& batch, double loss_scale, bool norm_training = true);

// DDP's gradient average: all-reduce (sum) the flat gradient, divide by W.
// On m's device (m.device(), the --norm_device placement) the flat gradient
// is uploaded, all-reduced on the device buffer and downloaded (two counted
// kParameter copies); on the host it is the host all-reduce as before. One
// collective either way (none when W = 1).
void AverageGradients(comm::Comm* comm, Model& m);
// DDP's broadcast_buffers=True: rank 0's running statistics to every rank.
void BroadcastBuffers(comm::Comm* comm, Model& m);
// Both in one all-reduce: the gradients (then / W) and the buffers, which
// every rank but rank 0 sends as zeros, so their sum is rank 0's buffers bit
// for bit. After a step's backward nothing changes the buffers before the
// next forward, so this is the broadcast DDP does before that forward, one
// collective earlier (per-rank BN training then needs one collective per step).
// On m's device the packed buffer travels as AverageGradients' does (kParameter).
void AverageGradientsAndBroadcastBuffers(comm::Comm* comm, Model& m);

// Error rate (0-1) in eval mode.
double ErrorRate(Model& m, const Images& data);

// fvcore's precise_bn, made exact for uneven ranks: every BatchNorm's running
// statistics := the plain average, over every batch of every rank, of the
// batch's mean and unbiased variance (train-mode forwards), i.e. the
// one-process average over the same batches. The ranks' sums and batch counts
// travel in one all-reduce, so a rank with fewer batches, or none, weighs
// exactly its share. comm == nullptr: this process's batches only. On m's
// device the packed sums (and the batch count, a double) are all-reduced on a
// device buffer: one kStatistic upload and download.
void PreciseBn(comm::Comm* comm, Model& m, std::span<const Images> batches);

// The (mean error, variance error) of the running statistics against the
// statistics each BatchNorm input really has in eval mode over `data`:
// mean over channels and both layers of |rm - pm| / sqrt(pv) and |rv / pv - 1|.
// {-1, -1} for GroupNorm.
std::pair<double, double> RunningStatError(Model& m, const Images& data);

}  // namespace ddp::small_batch_bn

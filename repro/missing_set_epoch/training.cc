#include "repro/missing_set_epoch/training.h"

#include <memory>
#include <span>

#include "core/data/data_loader.h"
#include "core/data/synthetic.h"
#include "core/device/copy_json.h"
#include "core/device/device_allreduce.h"
#include "core/device/device_flag.h"
#include "core/exact/replica.h"

namespace ddp::missing_set_epoch {
namespace {

// A fixed index list as a sampler, so the loader batches exactly what
// RankIndices says this rank iterates (the DistributedSampler itself).
class FixedSampler final : public data::Sampler {
 public:
  explicit FixedSampler(std::vector<int64_t> indices) : indices_(std::move(indices)) {}
  int64_t Size() const override { return static_cast<int64_t>(indices_.size()); }
  std::vector<int64_t> Indices() const override { return indices_; }

 private:
  std::vector<int64_t> indices_;
};

// Held-out data: a different seed from the training set.
constexpr uint64_t kTestSeedOffset = 1000003;

}  // namespace

Curves Train(comm::Comm& comm, Mode mode, const TrainConfig& c, const StepObserver& observer) {
  const uint64_t seed = static_cast<uint64_t>(c.order.seed);
  auto train = std::make_shared<const data::GaussianBinary>(
      data::GaussianBinaryConfig{.size = c.order.n, .seed = seed});
  const data::GaussianBinary test(
      data::GaussianBinaryConfig{.size = c.test_size, .seed = seed + kTestSeedOffset});
  std::vector<int64_t> all(static_cast<std::size_t>(c.test_size));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const data::Batch test_batch = data::Materialize(test, all);

  replica::Replica model(replica::ReplicaOptions{.in_features = train->FeatureDim(),
                                                 .norm = c.norm,
                                                 .init_seed = seed,
                                                 .lr = c.lr,
                                                 .momentum = c.momentum});
  const auto dev = device::MakeDevice<double>(c.device, device::kDeviceFlag);
  Curves out;
  out.same_order_every_epoch = true;
  std::vector<int64_t> first_order;
  const int64_t seq0 = comm.next_seq();
  int64_t step = 0;
  for (int epoch = 0; epoch < c.order.epochs; ++epoch) {
    std::vector<int64_t> order = RankIndices(mode, c.order, comm.rank(), epoch);
    if (epoch == 0) first_order = order;
    out.same_order_every_epoch &= order == first_order;
    data::DataLoaderOptions lo;
    lo.batch_size = c.batch_size;
    lo.sampler = std::make_shared<FixedSampler>(order);
    data::DataLoader loader(train, lo);
    double loss_sum = 0, count = 0;
    int64_t step_in_epoch = 0;
    for (const auto& indices : loader.EpochBatches()) {
      const replica::ReplicaState before =
          observer ? model.State() : replica::ReplicaState{};
      const replica::LocalGradient g = model.Gradient(loader.Load(indices));
      // DDP: allreduce(sum) the gradients and divide by W. The loss sum and
      // count ride along for the train-loss curve.
      std::vector<double> buf(g.grad.data(), g.grad.data() + g.grad.size());
      buf.push_back(g.loss_sum);
      buf.push_back(static_cast<double>(g.count));
      const device::CopyCount copies = dev ? dev->copies() : device::CopyCount{};
      device::AllreduceOnDevice(comm, dev.get(), std::span<double>(buf), device::CopyKind::kParameter);
      if (dev && step == 0) out.device_copies = device::ToJson(dev->copies() - copies);
      Eigen::VectorXd avg = Eigen::Map<Eigen::VectorXd>(buf.data(), g.grad.size());
      avg /= comm.world_size();
      model.Apply(avg);
      if (observer) observer({epoch, step_in_epoch, step, before, avg, model});
      ++step_in_epoch;
      ++step;
      loss_sum += buf[buf.size() - 2];
      count += buf.back();
    }
    out.train_loss.push_back(count > 0 ? loss_sum / count : 0);
    const replica::Evaluation e = model.Evaluate(test_batch);
    out.test_loss.push_back(e.loss);
    out.test_accuracy.push_back(e.accuracy);
  }
  out.collectives = comm.next_seq() - seq0;
  return out;
}

}  // namespace ddp::missing_set_epoch

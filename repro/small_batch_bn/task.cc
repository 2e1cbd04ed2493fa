#include "repro/small_batch_bn/task.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/data/det_random.h"
#include "core/data/digits.h"
#include "core/data/synthetic.h"
#include "core/device/copy_json.h"
#include "core/device/device_allreduce.h"
#include "core/device/group_norm.h"
#include "core/nn/group_norm.h"
#include "core/nn/loss.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"

namespace ddp::small_batch_bn {

using nn::Tensor4;
using nn::Vector;

// Wraps a norm layer; while probing, merges the statistics of its inputs.
class ProbeNorm final : public nn::NormLayer<double> {
 public:
  explicit ProbeNorm(std::unique_ptr<nn::NormLayer<double>> inner) : inner_(std::move(inner)) {}
  Tensor4<double> Forward(const Tensor4<double>& x) override {
    if (probing_) nn::MergeInto(nn::ComputeChannelStats(x), &probe_);
    return inner_->Forward(x);
  }
  Tensor4<double> Backward(const Tensor4<double>& dy) override { return inner_->Backward(dy); }
  void SetTraining(bool t) override { inner_->SetTraining(t); }
  nn::ParamList<double> Params() override { return inner_->Params(); }
  nn::BufferList<double> Buffers() override { return inner_->Buffers(); }
  int channels() const override { return inner_->channels(); }

  nn::NormLayer<double>& inner() { return *inner_; }
  void StartProbe() {
    probing_ = true;
    probe_ = nn::ChannelStats<double>::Empty(inner_->channels());
  }
  nn::ChannelStats<double> StopProbe() {
    probing_ = false;
    return probe_;
  }

 private:
  std::unique_ptr<nn::NormLayer<double>> inner_;
  bool probing_ = false;
  nn::ChannelStats<double> probe_;
};

namespace {

// The split is part of the data set: the same in every run.
constexpr int64_t kSplitSeed = 0;
// Validation noise: fixed, and never one of a run's training streams.
constexpr uint64_t kValNoiseSeed = 0x5EED0FF5E7ULL;
// The tiny-images validation set uses its own seed family.
constexpr uint64_t kTinyValSeed = 1000003;

Images FromDataset(const data::Dataset& d, int channels) {
  const int plane = d.FeatureDim() / channels;
  const int side = static_cast<int>(std::lround(std::sqrt(plane)));
  Images out;
  out.x = Tensor4<double>(static_cast<int>(d.Size()), channels, side, side);
  const Eigen::Index per = d.FeatureDim();
  for (int64_t i = 0; i < d.Size(); ++i) {
    const data::Sample s = d.Get(i);
    out.x.data.segment(i * per, per) = s.x;
    out.labels.push_back(s.label);
  }
  return out;
}

}  // namespace

const char* ToString(Task t) { return t == Task::kDigits ? "digits" : "tiny_images"; }

const char* ToString(NormKind k) {
  switch (k) {
    case NormKind::kBatchNorm: return "bn";
    case NormKind::kSyncBatchNorm: return "sync_bn";
    case NormKind::kGroupNorm: return "group_norm";
  }
  return "?";
}

int Channels(Task t) { return t == Task::kDigits ? 1 : data::TinyImages::kChannels; }
int Classes(Task t) { return t == Task::kDigits ? data::Digits::kClasses : data::TinyImages::kClasses; }

Images TrainImages(const TaskConfig& c, int epoch) {
  if (c.task == Task::kTinyImages) {
    return FromDataset(data::TinyImages({.size = c.n_train_tiny, .seed = c.seed}), Channels(c.task));
  }
  data::DigitsConfig d;
  d.indices = data::DigitsSplit(c.n_val, kSplitSeed).first;
  d.noise = c.noise;
  d.noise_seed = data::StreamSeed(c.seed, static_cast<uint64_t>(c.fresh_noise ? epoch : 0));
  return FromDataset(data::Digits(std::move(d)), 1);
}

Images ValImages(const TaskConfig& c) {
  if (c.task == Task::kTinyImages) {
    return FromDataset(data::TinyImages({.size = c.n_val, .seed = c.seed + kTinyValSeed}), Channels(c.task));
  }
  data::DigitsConfig d;
  d.indices = data::DigitsSplit(c.n_val, kSplitSeed).second;
  d.noise = c.noise;
  d.noise_seed = kValNoiseSeed;
  return FromDataset(data::Digits(std::move(d)), 1);
}

Images Take(const Images& all, std::span<const int64_t> idx) {
  const Eigen::Index per = static_cast<Eigen::Index>(all.x.c) * all.x.h * all.x.w;
  Images out;
  out.x = Tensor4<double>(static_cast<int>(idx.size()), all.x.c, all.x.h, all.x.w);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    out.x.data.segment(i * per, per) = all.x.data.segment(idx[i] * per, per);
    out.labels.push_back(all.labels[idx[i]]);
  }
  return out;
}

Images Concat(std::span<const Images> parts) {
  if (parts.empty()) throw std::invalid_argument("Concat: no parts");
  int n = 0;
  for (const Images& p : parts) n += p.x.n;
  const Tensor4<double>& f = parts[0].x;
  Images out;
  out.x = Tensor4<double>(n, f.c, f.h, f.w);
  Eigen::Index at = 0;
  for (const Images& p : parts) {
    out.x.data.segment(at, p.x.data.size()) = p.x.data;
    at += p.x.data.size();
    out.labels.insert(out.labels.end(), p.labels.begin(), p.labels.end());
  }
  return out;
}

namespace {

// The norm layers of `norm` on `dev`, or core/nn's when it is null: the one
// place the pair chooses between the host and a device.
nn::NormFactory<double> NormFactoryFor(NormKind norm, comm::Comm* comm, device::Device<double>* dev, int gn_groups,
                                       SyncBnTraffic* traffic) {
  switch (norm) {
    case NormKind::kSyncBatchNorm:
      if (comm) return SyncBatchNormFactory<double>(*comm, {}, traffic, dev);
      [[fallthrough]];  // one process: a BatchNorm over the whole batch is what SyncBatchNorm computes
    case NormKind::kBatchNorm:
      return dev ? device::DeviceBatchNormFactory<double>(dev) : nn::BatchNormFactory<double>();
    case NormKind::kGroupNorm:
      return dev ? device::DeviceGroupNormFactory<double>(dev, gn_groups) : nn::GroupNormFactory<double>(gn_groups);
  }
  throw std::invalid_argument("unknown NormKind");
}

}  // namespace

Model::Model(Task task, NormKind norm, uint64_t seed, comm::Comm* comm, int gn_groups, SyncBnTraffic* traffic,
             device::Placement placement)
    : kind_(norm), placement_(device::Resolve(placement, comm ? comm->backend() : "")),
      device_(device::MakeDevice<double>(placement_)) {
  const nn::NormFactory<double> inner = NormFactoryFor(norm, comm, device_.get(), gn_groups, traffic);
  net_ = std::make_unique<nn::TinyCnn<double>>(
      nn::TinyCnnOptions{.in_channels = Channels(task), .num_classes = Classes(task), .seed = seed},
      [&](int ch) -> std::unique_ptr<nn::NormLayer<double>> {
        auto p = std::make_unique<ProbeNorm>(inner(ch));
        probes_.push_back(p.get());
        return p;
      });
}

nn::BatchNormLayer<double>* Model::bn(int l) {
  return dynamic_cast<nn::BatchNormLayer<double>*>(&probes_.at(l)->inner());
}
nn::NormLayer<double>& Model::norm(int l) { return probes_.at(l)->inner(); }

void Model::StartProbe() {
  for (ProbeNorm* p : probes_) p->StartProbe();
}

std::vector<nn::ChannelStats<double>> Model::StopProbe() {
  std::vector<nn::ChannelStats<double>> out;
  for (ProbeNorm* p : probes_) out.push_back(p->StopProbe());
  return out;
}

StepCopies::StepCopies(comm::Comm& comm, const Model& m)
    : comm_(comm), m_(m), layers_(m.device_copies()), staged_(comm.staged_copies()) {}

results::Json StepCopies::Layers() const {
  if (m_.placement() == device::Placement::kHost) return results::Json();
  return device::ToJson(m_.device_copies() - layers_);
}

results::Json StepCopies::Staging() const { return device::StagingJson(staged_, comm_.staged_copies()); }

double ForwardBackward(Model& m, const Images& batch, double loss_scale, bool norm_training) {
  m.net().SetTraining(norm_training);
  const nn::Matrix<double> logits = m.net().Forward(batch.x);
  if (batch.size() == 0) {
    m.net().Backward(nn::Matrix<double>::Zero(0, logits.cols()));
    return 0;
  }
  const nn::LossAndGrad<double> lg = nn::SoftmaxCrossEntropy<double>(logits, batch.labels);
  m.net().Backward(lg.grad * loss_scale);
  return lg.loss;
}

namespace {

std::span<double> Span(Vector<double>& v) { return {v.data(), static_cast<std::size_t>(v.size())}; }

}  // namespace

void AverageGradients(comm::Comm* comm, Model& m) {
  if (!comm || comm->world_size() == 1) return;
  const nn::ParamList<double> params = m.Params();
  Vector<double> g = nn::FlattenGrads(params);
  device::AllreduceOnDevice(*comm, m.device(), Span(g), device::CopyKind::kParameter);
  nn::UnflattenGrads(Vector<double>(g / static_cast<double>(comm->world_size())), params);
}

void BroadcastBuffers(comm::Comm* comm, Model& m) {
  if (!comm || comm->world_size() == 1) return;
  const auto buffers = m.Buffers();
  if (buffers.empty()) return;
  Vector<double> flat = nn::FlattenBuffers(buffers);
  comm->Broadcast(std::span<double>(flat.data(), flat.size()), 0);
  nn::UnflattenBuffers(flat, buffers);
}

void AverageGradientsAndBroadcastBuffers(comm::Comm* comm, Model& m) {
  if (!comm || comm->world_size() == 1) return;
  const auto params = m.Params();
  const auto buffers = m.Buffers();
  const Vector<double> g = nn::FlattenGrads(params);
  Vector<double> flat(g.size() + nn::NumElements(buffers));
  flat.head(g.size()) = g;
  flat.tail(flat.size() - g.size()) =
      comm->rank() == 0 ? nn::FlattenBuffers(buffers) : Vector<double>::Zero(flat.size() - g.size());
  device::AllreduceOnDevice(*comm, m.device(), Span(flat), device::CopyKind::kParameter);
  nn::UnflattenGrads(Vector<double>(flat.head(g.size()) / static_cast<double>(comm->world_size())), params);
  nn::UnflattenBuffers(Vector<double>(flat.tail(flat.size() - g.size())), buffers);
}

double ErrorRate(Model& m, const Images& data) {
  m.net().SetTraining(false);
  int64_t wrong = 0;
  constexpr int64_t kChunk = 256;
  for (int64_t a = 0; a < data.size(); a += kChunk) {
    std::vector<int64_t> idx;
    for (int64_t i = a; i < std::min(data.size(), a + kChunk); ++i) idx.push_back(i);
    const nn::Matrix<double> logits = m.net().Forward(Take(data, idx).x);
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
      Eigen::Index arg;
      logits.row(i).maxCoeff(&arg);
      wrong += arg != data.labels[idx[i]];
    }
  }
  m.net().SetTraining(true);
  return static_cast<double>(wrong) / static_cast<double>(std::max<int64_t>(data.size(), 1));
}

void PreciseBn(comm::Comm* comm, Model& m, std::span<const Images> batches) {
  if (!m.bn(0) || !m.bn(1)) throw std::invalid_argument("PreciseBn: needs BatchNorm layers");
  // Packed: per layer [sum of batch means (C), sum of unbiased batch variances (C)], then the batch count.
  std::vector<double> packed;
  const int c0 = m.bn(0)->channels(), c1 = m.bn(1)->channels();
  packed.assign(2 * (c0 + c1) + 1, 0.0);
  m.net().SetTraining(true);
  for (const Images& b : batches) {
    if (b.size() == 0) continue;
    m.net().Forward(b.x);
    std::size_t at = 0;
    for (int l = 0; l < 2; ++l) {
      const nn::ChannelStats<double>& s = m.bn(l)->last_stats();
      for (int ch = 0; ch < s.channels(); ++ch) packed[at + ch] += s.mean[ch];
      for (int ch = 0; ch < s.channels(); ++ch) {
        packed[at + s.channels() + ch] += s.m2[ch] / static_cast<double>(s.count - 1);
      }
      at += 2 * static_cast<std::size_t>(s.channels());
    }
    packed.back() += 1;
  }
  if (comm && comm->world_size() > 1) {
    device::AllreduceOnDevice(*comm, m.device(), std::span<double>(packed), device::CopyKind::kStatistic);
  }
  const double batches_seen = packed.back();
  if (batches_seen == 0) throw std::invalid_argument("PreciseBn: no batch on any rank");
  std::size_t at = 0;
  for (int l = 0; l < 2; ++l) {
    nn::BatchNormLayer<double>* bn = m.bn(l);
    const int c = bn->channels();
    for (int ch = 0; ch < c; ++ch) {
      bn->running_mean()(0, ch) = packed[at + ch] / batches_seen;
      bn->running_var()(0, ch) = packed[at + c + ch] / batches_seen;
    }
    at += 2 * static_cast<std::size_t>(c);
  }
}

std::pair<double, double> RunningStatError(Model& m, const Images& data) {
  if (!m.bn(0) || !m.bn(1)) return {-1, -1};
  m.net().SetTraining(false);
  m.StartProbe();
  constexpr int64_t kChunk = 256;
  for (int64_t a = 0; a < data.size(); a += kChunk) {
    std::vector<int64_t> idx;
    for (int64_t i = a; i < std::min(data.size(), a + kChunk); ++i) idx.push_back(i);
    m.net().Forward(Take(data, idx).x);
  }
  const auto pop = m.StopProbe();
  m.net().SetTraining(true);
  double mean_err = 0, var_err = 0;
  int n = 0;
  for (int l = 0; l < 2; ++l) {
    nn::BatchNormLayer<double>* bn = m.bn(l);
    for (int c = 0; c < bn->channels(); ++c) {
      const double pm = pop[l].mean[c];
      const double pv = pop[l].m2[c] / static_cast<double>(pop[l].count - 1);
      mean_err += std::fabs(bn->running_mean()(0, c) - pm) / std::sqrt(pv);
      var_err += std::fabs(bn->running_var()(0, c) / pv - 1);
      ++n;
    }
  }
  return {mean_err / n, var_err / n};
}

}  // namespace ddp::small_batch_bn

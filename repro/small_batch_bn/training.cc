#include "repro/small_batch_bn/training.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "core/data/data_loader.h"
#include "core/data/sampler.h"
#include "core/data/synthetic.h"
#include "core/nn/batch_norm.h"
#include "core/nn/group_norm.h"
#include "core/nn/loss.h"
#include "core/nn/models.h"
#include "core/nn/sgd.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"

namespace ddp::small_batch_bn {
namespace {

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

  nn::BatchNorm<double>* bn() { return dynamic_cast<nn::BatchNorm<double>*>(inner_.get()); }
  void StartProbe() {
    probing_ = true;
    probe_ = nn::ChannelStats<double>::Empty(inner_->channels());
  }
  const nn::ChannelStats<double>& StopProbe() {
    probing_ = false;
    return probe_;
  }

 private:
  std::unique_ptr<nn::NormLayer<double>> inner_;
  bool probing_ = false;
  nn::ChannelStats<double> probe_;
};

// All images of a dataset as one N x 3 x 8 x 8 tensor.
Tensor4<double> LoadAll(const data::TinyImages& d) {
  constexpr int kPer = data::TinyImages::kChannels * data::TinyImages::kHeight * data::TinyImages::kWidth;
  Tensor4<double> t(static_cast<int>(d.Size()), data::TinyImages::kChannels, data::TinyImages::kHeight,
                    data::TinyImages::kWidth);
  for (int64_t i = 0; i < d.Size(); ++i) t.data.segment(i * kPer, kPer) = d.Get(i).x;
  return t;
}

Tensor4<double> Gather(const Tensor4<double>& all, const std::vector<int64_t>& idx) {
  const Eigen::Index per = static_cast<Eigen::Index>(all.c) * all.h * all.w;
  Tensor4<double> t(static_cast<int>(idx.size()), all.c, all.h, all.w);
  for (std::size_t i = 0; i < idx.size(); ++i) t.data.segment(i * per, per) = all.data.segment(idx[i] * per, per);
  return t;
}

// This rank's index batches of one epoch (DistributedSampler + drop_last loader).
std::vector<std::vector<int64_t>> RankBatches(const TrainConfig& c, std::shared_ptr<const data::Dataset> ds,
                                              int rank, int64_t epoch) {
  auto sampler = std::make_shared<data::DistributedSampler>(
      ds->Size(), data::DistributedSamplerOptions{.num_replicas = c.world_size, .rank = rank, .shuffle = true,
                                                  .seed = static_cast<int64_t>(c.seed)});
  data::DataLoaderOptions opts;
  opts.batch_size = static_cast<int64_t>(c.batch_per_rank) * c.accumulate;
  opts.drop_last = true;
  opts.sampler = sampler;
  data::DataLoader loader(ds, opts);
  loader.SetEpoch(epoch);
  return loader.EpochBatches();
}

// One process replaying W ranks: step s = concatenation of every rank's step s.
std::vector<std::vector<int64_t>> ReplayBatches(const TrainConfig& c, std::shared_ptr<const data::Dataset> ds,
                                                int64_t epoch) {
  std::vector<std::vector<std::vector<int64_t>>> per_rank;
  for (int r = 0; r < c.world_size; ++r) per_rank.push_back(RankBatches(c, ds, r, epoch));
  std::vector<std::vector<int64_t>> out(per_rank[0].size());
  for (std::size_t s = 0; s < out.size(); ++s) {
    // Micro-batch k of the replay = micro-batch k of every rank, in rank order.
    for (int k = 0; k < c.accumulate; ++k) {
      for (int r = 0; r < c.world_size; ++r) {
        const auto& b = per_rank[r][s];
        out[s].insert(out[s].end(), b.begin() + k * c.batch_per_rank, b.begin() + (k + 1) * c.batch_per_rank);
      }
    }
  }
  return out;
}

struct Model {
  std::unique_ptr<nn::TinyCnn<double>> net;
  ProbeNorm* norm[2];
};

// Eval-mode statistics of each BN input over all training images.
std::vector<nn::ChannelStats<double>> Population(Model& m, const Tensor4<double>& train) {
  m.net->SetTraining(false);
  for (ProbeNorm* p : m.norm) p->StartProbe();
  constexpr int kChunk = 128;
  for (int a = 0; a < train.n; a += kChunk) {
    std::vector<int64_t> idx;
    for (int i = a; i < std::min(train.n, a + kChunk); ++i) idx.push_back(i);
    m.net->Forward(Gather(train, idx));
  }
  std::vector<nn::ChannelStats<double>> out;
  for (ProbeNorm* p : m.norm) out.push_back(p->StopProbe());
  m.net->SetTraining(true);
  return out;
}

// (mean error, var error) of the running statistics against the population.
std::pair<double, double> RunningStatError(Model& m, const Tensor4<double>& train) {
  const auto pop = Population(m, train);
  double mean_err = 0, var_err = 0;
  int n = 0;
  for (int l = 0; l < 2; ++l) {
    nn::BatchNorm<double>* bn = m.norm[l]->bn();
    if (!bn) return {-1, -1};
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

double Accuracy(Model& m, const Tensor4<double>& val, const std::vector<int>& labels) {
  m.net->SetTraining(false);
  int64_t correct = 0;
  constexpr int kChunk = 128;
  for (int a = 0; a < val.n; a += kChunk) {
    std::vector<int64_t> idx;
    for (int i = a; i < std::min(val.n, a + kChunk); ++i) idx.push_back(i);
    const nn::Matrix<double> logits = m.net->Forward(Gather(val, idx));
    for (Eigen::Index i = 0; i < logits.rows(); ++i) {
      Eigen::Index arg;
      logits.row(i).maxCoeff(&arg);
      correct += arg == labels[idx[i]];
    }
  }
  m.net->SetTraining(true);
  return static_cast<double>(correct) / val.n;
}

void BroadcastBuffers(comm::Comm* comm, Model& m) {
  if (!comm || comm->world_size() == 1) return;
  const auto buffers = m.net->Buffers();
  if (buffers.empty()) return;
  Vector<double> flat = nn::FlattenBuffers(buffers);
  comm->Broadcast(std::span<double>(flat.data(), flat.size()), 0);
  nn::UnflattenBuffers(flat, buffers);
}

// fvcore's precise_bn: running stats := the plain average over M training
// batches of each BN layer's batch mean and (unbiased) batch variance, in
// train mode; across ranks, averaged once more (one all-reduce).
void PreciseBn(comm::Comm* comm, Model& m, const Tensor4<double>& train,
               const std::vector<std::vector<int64_t>>& batches, int batch, int num_batches) {
  std::vector<Vector<double>> sum_mean, sum_var;
  for (ProbeNorm* p : m.norm) {
    sum_mean.push_back(Vector<double>::Zero(p->channels()));
    sum_var.push_back(Vector<double>::Zero(p->channels()));
  }
  int done = 0;
  for (int i = 0; done < num_batches; ++i) {
    const auto& b = batches[i % batches.size()];
    for (std::size_t a = 0; a + batch <= b.size() && done < num_batches; a += batch, ++done) {
      m.net->Forward(Gather(train, std::vector<int64_t>(b.begin() + a, b.begin() + a + batch)));
      for (int l = 0; l < 2; ++l) {
        const auto& s = m.norm[l]->bn()->last_stats();
        sum_mean[l] += s.mean;
        sum_var[l] += s.m2 / static_cast<double>(s.count - 1);
      }
    }
  }
  double divisor = num_batches;
  if (comm && comm->world_size() > 1) {
    for (int l = 0; l < 2; ++l) {
      comm->Allreduce(std::span<double>(sum_mean[l].data(), sum_mean[l].size()));
      comm->Allreduce(std::span<double>(sum_var[l].data(), sum_var[l].size()));
    }
    divisor *= comm->world_size();
  }
  for (int l = 0; l < 2; ++l) {
    m.norm[l]->bn()->running_mean().row(0) = (sum_mean[l] / divisor).transpose();
    m.norm[l]->bn()->running_var().row(0) = (sum_var[l] / divisor).transpose();
  }
}

}  // namespace

const char* ToString(NormKind k) {
  switch (k) {
    case NormKind::kBatchNorm: return "bn";
    case NormKind::kSyncBatchNorm: return "sync_bn";
    case NormKind::kGroupNorm: return "group_norm";
  }
  return "?";
}

TrainResult Train(comm::Comm* comm, const TrainConfig& c) {
  if (comm && comm->world_size() != c.world_size) throw std::invalid_argument("Train: world size mismatch");
  if (c.precise_bn && c.norm == NormKind::kGroupNorm) throw std::invalid_argument("Train: PreciseBN needs BatchNorm");
  const bool replay = comm == nullptr;
  const int rank = comm ? comm->rank() : 0;
  const int w = comm ? comm->world_size() : 1;
  // Per forward, this process sees batch_per_rank samples (DDP) or the
  // concatenation over the replayed world (reference).
  const int micro = replay ? c.batch_per_rank * c.world_size : c.batch_per_rank;

  auto train_ds = std::make_shared<data::TinyImages>(data::TinyImagesConfig{.size = c.n_train, .seed = c.seed});
  const data::TinyImages val_ds(data::TinyImagesConfig{.size = c.n_val, .seed = c.seed + 1000003});
  const Tensor4<double> train = LoadAll(*train_ds);
  const Tensor4<double> val = LoadAll(val_ds);
  std::vector<int> train_labels(c.n_train), val_labels(c.n_val);
  for (int64_t i = 0; i < c.n_train; ++i) train_labels[i] = train_ds->Get(i).label;
  for (int64_t i = 0; i < c.n_val; ++i) val_labels[i] = val_ds.Get(i).label;

  nn::NormFactory<double> inner;
  switch (c.norm) {
    case NormKind::kBatchNorm: inner = nn::BatchNormFactory<double>(); break;
    case NormKind::kSyncBatchNorm:
      // One process: a BatchNorm over the whole (replayed) batch is the reference.
      inner = comm ? SyncBatchNormFactory<double>(*comm) : nn::BatchNormFactory<double>();
      break;
    case NormKind::kGroupNorm: inner = nn::GroupNormFactory<double>(c.gn_groups); break;
  }
  Model m;
  std::vector<ProbeNorm*> made;
  m.net = std::make_unique<nn::TinyCnn<double>>(
      nn::TinyCnnOptions{.seed = c.seed}, [&](int ch) -> std::unique_ptr<nn::NormLayer<double>> {
        auto p = std::make_unique<ProbeNorm>(inner(ch));
        made.push_back(p.get());
        return p;
      });
  m.norm[0] = made[0];
  m.norm[1] = made[1];
  const auto params = m.net->Params();
  nn::Sgd<double> sgd(params, {.lr = c.lr, .momentum = 0.9});
  const bool has_bn = c.norm != NormKind::kGroupNorm;

  TrainResult out;
  double spread_sum[2] = {0, 0};
  int64_t spread_n = 0;
  std::vector<std::vector<int64_t>> last_batches;
  for (int epoch = 0; epoch < c.epochs; ++epoch) {
    const auto batches = replay ? ReplayBatches(c, train_ds, epoch) : RankBatches(c, train_ds, rank, epoch);
    for (const auto& step : batches) {
      nn::ZeroGrads(params);
      for (int k = 0; k < c.accumulate; ++k) {
        const std::vector<int64_t> idx(step.begin() + k * micro, step.begin() + (k + 1) * micro);
        if (has_bn) BroadcastBuffers(comm, m);
        const nn::Matrix<double> logits = m.net->Forward(Gather(train, idx));
        std::vector<int> labels;
        for (int64_t i : idx) labels.push_back(train_labels[i]);
        nn::LossAndGrad<double> lg = nn::SoftmaxCrossEntropy<double>(logits, labels);
        m.net->Backward(lg.grad / static_cast<double>(c.accumulate));
        // How far apart the ranks' normalisation statistics are (measurement only).
        if (has_bn && comm && w > 1) {
          for (int l = 0; l < 2; ++l) {
            const auto& s = m.norm[l]->bn()->last_stats();
            std::vector<double> mine(1 + 2 * s.channels());
            mine[0] = static_cast<double>(s.count);
            for (int ch = 0; ch < s.channels(); ++ch) {
              mine[1 + ch] = s.mean[ch];
              mine[1 + s.channels() + ch] = s.m2[ch];
            }
            const std::vector<double> all = comm->Allgather(std::span<const double>(mine));
            std::vector<nn::ChannelStats<double>> parts(w);
            const int ch_n = s.channels();
            for (int r = 0; r < w; ++r) {
              const double* p = all.data() + r * mine.size();
              parts[r] = {static_cast<int64_t>(p[0]), Eigen::Map<const Vector<double>>(p + 1, ch_n),
                          Eigen::Map<const Vector<double>>(p + 1 + ch_n, ch_n)};
            }
            const auto merged = nn::MergeChannelStats(std::span<const nn::ChannelStats<double>>(parts));
            double spread = 0;
            for (int ch = 0; ch < ch_n; ++ch) {
              double mu = 0, sq = 0;
              for (int r = 0; r < w; ++r) mu += parts[r].mean[ch] / w;
              for (int r = 0; r < w; ++r) sq += (parts[r].mean[ch] - mu) * (parts[r].mean[ch] - mu) / w;
              const double var = merged.m2[ch] / static_cast<double>(merged.count);
              spread += std::sqrt(sq) / std::sqrt(std::max(var, 1e-300));
            }
            spread_sum[l] += spread / ch_n;
          }
          ++spread_n;
        }
      }
      if (comm && w > 1) {
        Vector<double> g = nn::FlattenGrads(params);
        comm->Allreduce(std::span<double>(g.data(), g.size()));
        nn::UnflattenGrads(Vector<double>(g / static_cast<double>(w)), params);
      }
      sgd.Step();
      ++out.steps;
    }
    last_batches = batches;
    if (has_bn) BroadcastBuffers(comm, m);  // DDP's eval forward syncs buffers too
    if (c.precise_bn) {
      if (epoch + 1 == c.epochs) {
        std::tie(out.rs_mean_err_before_precise, out.rs_var_err_before_precise) = RunningStatError(m, train);
      }
      PreciseBn(comm, m, train, batches, micro, c.precise_batches);
    }
    out.val_acc.push_back(Accuracy(m, val, val_labels));
  }
  if (has_bn) std::tie(out.rs_mean_err, out.rs_var_err) = RunningStatError(m, train);
  if (spread_n > 0) {
    out.rank_spread1 = spread_sum[0] / spread_n;
    out.rank_spread2 = spread_sum[1] / spread_n;
  }
  out.params = nn::FlattenValues(params);
  out.buffers = nn::FlattenBuffers(m.net->Buffers());
  return out;
}

AccSummary Summarize(const std::vector<double>& acc) {
  AccSummary s;
  if (acc.empty()) return s;
  s.last = acc.back();
  const std::size_t from = acc.size() / 2;
  const double n = static_cast<double>(acc.size() - from);
  double lo = 1, hi = 0;
  for (std::size_t i = from; i < acc.size(); ++i) {
    s.mean += acc[i] / n;
    lo = std::min(lo, acc[i]);
    hi = std::max(hi, acc[i]);
  }
  for (std::size_t i = from; i < acc.size(); ++i) s.sd += (acc[i] - s.mean) * (acc[i] - s.mean) / n;
  s.sd = std::sqrt(s.sd);
  s.half_range = (hi - lo) / 2;
  return s;
}

results::Json ToJson(const TrainResult& r) {
  results::Json j;
  results::Json acc = results::Json::MakeArray();
  for (double a : r.val_acc) acc.Push(a);
  j["val_acc"] = acc;
  j["rs_mean_err"] = r.rs_mean_err;
  j["rs_var_err"] = r.rs_var_err;
  j["rs_mean_err_before_precise"] = r.rs_mean_err_before_precise;
  j["rs_var_err_before_precise"] = r.rs_var_err_before_precise;
  j["rank_spread1"] = r.rank_spread1;
  j["rank_spread2"] = r.rank_spread2;
  j["steps"] = static_cast<double>(r.steps);
  return j;
}

}  // namespace ddp::small_batch_bn

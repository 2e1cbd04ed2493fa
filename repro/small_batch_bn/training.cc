#include "repro/small_batch_bn/training.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <numbers>
#include <stdexcept>

#include "core/data/sampler.h"
#include "core/nn/adam.h"
#include "core/nn/sgd.h"
#include "fixes/small_batch_bn/sync_batch_norm.h"

namespace ddp::small_batch_bn {
namespace {

using nn::Vector;

// This rank's index batches of one epoch: DistributedSampler(shuffle, seed,
// set_epoch) cut into batches of `batch`, the short last one dropped (what a
// DataLoader with drop_last=True yields).
std::vector<std::vector<int64_t>> RankBatches(int64_t n, int world, int rank, uint64_t seed, int epoch,
                                              int batch) {
  data::DistributedSampler sampler(
      n, data::DistributedSamplerOptions{
             .num_replicas = world, .rank = rank, .shuffle = true, .seed = static_cast<int64_t>(seed)});
  sampler.SetEpoch(epoch);
  const std::vector<int64_t> idx = sampler.Indices();
  std::vector<std::vector<int64_t>> out;
  for (std::size_t a = 0; a + batch <= idx.size(); a += batch) out.emplace_back(idx.begin() + a, idx.begin() + a + batch);
  return out;
}

// One process replaying W ranks: step s = every rank's step s, micro-batch k
// of the replay = micro-batch k of every rank, in rank order.
std::vector<std::vector<int64_t>> ReplayBatches(int64_t n, const TrainConfig& c, int epoch) {
  const int b = c.batch_per_rank;
  std::vector<std::vector<std::vector<int64_t>>> per_rank;
  for (int r = 0; r < c.world_size; ++r) {
    per_rank.push_back(RankBatches(n, c.world_size, r, c.task.seed, epoch, b * c.accumulate));
  }
  std::vector<std::vector<int64_t>> out(per_rank[0].size());
  for (std::size_t s = 0; s < out.size(); ++s) {
    for (int k = 0; k < c.accumulate; ++k) {
      for (int r = 0; r < c.world_size; ++r) {
        const auto& rb = per_rank[r][s];
        out[s].insert(out[s].end(), rb.begin() + k * b, rb.begin() + (k + 1) * b);
      }
    }
  }
  return out;
}

// Cross-rank spread of this micro-batch's batch means, per BN layer (one
// all-gather per layer; measurement only, nothing feeds back into training).
void AddRankSpread(comm::Comm& comm, Model& m, double spread_sum[2]) {
  const int w = comm.world_size();
  for (int l = 0; l < 2; ++l) {
    const std::vector<nn::ChannelStats<double>> parts = AllgatherChannelStats(comm, m.bn(l)->last_stats());
    const int ch_n = parts[0].channels();
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
}

}  // namespace

double PeakLearningRate(const TrainConfig& c) {
  if (c.optimizer == Optimizer::kAdam) return c.adam_lr;
  return c.base_lr * static_cast<double>(c.world_size) * c.batch_per_rank * c.accumulate / 32.0;
}

double LearningRate(double peak, int64_t t, int64_t warmup, int64_t total) {
  if (t < warmup) return peak * static_cast<double>(t + 1) / static_cast<double>(warmup);
  const double span = static_cast<double>(std::max<int64_t>(total - warmup, 1));
  return peak * 0.5 * (1 + std::cos(std::numbers::pi * static_cast<double>(t - warmup) / span));
}

TrainResult Train(comm::Comm* comm, const TrainConfig& c) {
  const bool replay = comm == nullptr;
  const int w = c.world_size;
  const int rank = comm ? comm->rank() : 0;
  if (comm && comm->world_size() != w) throw std::invalid_argument("Train: world size mismatch");
  if (c.precise_bn && c.norm == NormKind::kGroupNorm) throw std::invalid_argument("Train: PreciseBN needs BatchNorm");
  if (c.bn_eval_from_epoch >= 0 && (c.norm != NormKind::kBatchNorm || c.precise_bn)) {
    throw std::invalid_argument("Train: BN layers in eval mode need plain BatchNorm without PreciseBN");
  }
  if (replay && c.norm == NormKind::kBatchNorm && w > 1) {
    throw std::invalid_argument("Train: one process cannot replay per-rank BatchNorm (that needs the ranks)");
  }
  const bool per_rank_bn = c.norm == NormKind::kBatchNorm && !replay && w > 1;
  // Per forward this process sees b samples (a rank) or the W ranks' b each (the replay).
  const int micro = replay ? c.batch_per_rank * w : c.batch_per_rank;

  Model m(c.task.task, c.norm, c.task.seed, comm, c.gn_groups, nullptr, c.placement);
  const auto params = m.Params();
  const double peak_lr = PeakLearningRate(c);
  // One of the two optimizers; both take the schedule through set_lr.
  std::optional<nn::Sgd<double>> sgd;
  std::optional<nn::Adam<double>> adam;
  if (c.optimizer == Optimizer::kAdam) {
    adam.emplace(params, nn::AdamOptions{.lr = peak_lr});
  } else {
    sgd.emplace(params, nn::SgdOptions{.lr = peak_lr, .momentum = c.momentum});
  }
  const Images val = ValImages(c.task);

  TrainResult out;
  double spread_sum[2] = {0, 0};
  int64_t spread_n = 0, micro_n = 0;
  Images train;
  std::vector<Images> last_batches;
  for (int epoch = 0; epoch < c.epochs; ++epoch) {
    train = TrainImages(c.task, epoch);
    const auto batches = replay ? ReplayBatches(train.size(), c, epoch)
                                : RankBatches(train.size(), w, rank, c.task.seed, epoch, c.batch_per_rank * c.accumulate);
    if (batches.empty()) throw std::invalid_argument("Train: the global batch is larger than the training set");
    const int64_t per_epoch = static_cast<int64_t>(batches.size());
    const int64_t total = per_epoch * c.epochs;
    const auto warmup = static_cast<int64_t>(std::llround(c.warmup_epochs * static_cast<double>(per_epoch)));
    last_batches.clear();
    const bool bn_eval = c.bn_eval_from_epoch >= 0 && epoch >= c.bn_eval_from_epoch;
    for (const auto& step : batches) {
      const bool decay = c.cosine || out.steps < warmup;
      const double lr = decay ? LearningRate(peak_lr, out.steps, warmup, total) : peak_lr;
      if (sgd) sgd->set_lr(lr);
      if (adam) adam->set_lr(lr);
      nn::ZeroGrads(params);
      std::optional<StepCopies> copies;
      if (comm && out.steps == 0) copies.emplace(*comm, m);
      for (int k = 0; k < c.accumulate; ++k) {
        const std::span<const int64_t> idx(step.data() + k * micro, micro);
        const Images batch = Take(train, idx);
        // broadcast_buffers: before micro-batch 0 the buffers are already rank
        // 0's (they travelled with the last step's gradients, see below).
        if (per_rank_bn && k > 0) BroadcastBuffers(comm, m);
        ForwardBackward(m, batch, 1.0 / c.accumulate, /*norm_training=*/!bn_eval);
        // In eval mode the layers keep no batch statistics to compare.
        if (per_rank_bn && !bn_eval && micro_n++ % c.spread_every == 0) {
          AddRankSpread(*comm, m, spread_sum);
          ++spread_n;
        }
        if (c.precise_bn && static_cast<int>(last_batches.size()) < c.precise_batches) last_batches.push_back(batch);
      }
      if (per_rank_bn) {
        AverageGradientsAndBroadcastBuffers(comm, m);
      } else {
        AverageGradients(comm, m);
      }
      if (sgd) sgd->Step();
      if (adam) adam->Step();
      if (copies) {
        out.first_step_device_copies = copies->Layers();
        out.first_step_comm_staging = copies->Staging();
      }
      ++out.steps;
    }
    if (c.precise_bn) {
      if (epoch + 1 == c.epochs) {
        std::tie(out.rs_mean_err_before_precise, out.rs_var_err_before_precise) = RunningStatError(m, train);
      }
      PreciseBn(comm, m, last_batches);
    }
    out.val_error.push_back(ErrorRate(m, val));
  }
  out.train_error = ErrorRate(m, train);
  std::tie(out.rs_mean_err, out.rs_var_err) = RunningStatError(m, train);
  if (spread_n > 0) {
    out.rank_spread1 = spread_sum[0] / spread_n;
    out.rank_spread2 = spread_sum[1] / spread_n;
  }
  out.params = nn::FlattenValues(params);
  out.buffers = nn::FlattenBuffers(m.Buffers());
  return out;
}

namespace {

results::Json VectorJson(const Vector<double>& v) {
  results::Json a = results::Json::array();
  for (Eigen::Index i = 0; i < v.size(); ++i) a.push_back(v[i]);
  return a;
}

Vector<double> JsonVector(const results::Json& a) {
  const auto& items = a;
  Vector<double> v(static_cast<Eigen::Index>(items.size()));
  for (std::size_t i = 0; i < items.size(); ++i) v[static_cast<Eigen::Index>(i)] = items[i].get<double>();
  return v;
}

}  // namespace

results::Json ToJson(const TrainResult& r) {
  results::Json j;
  results::Json err = results::Json::array();
  for (double e : r.val_error) err.push_back(e);
  j["val_error"] = err;
  j["train_error"] = r.train_error;
  j["rs_mean_err"] = r.rs_mean_err;
  j["rs_var_err"] = r.rs_var_err;
  j["rs_mean_err_before_precise"] = r.rs_mean_err_before_precise;
  j["rs_var_err_before_precise"] = r.rs_var_err_before_precise;
  j["rank_spread1"] = r.rank_spread1;
  j["rank_spread2"] = r.rank_spread2;
  j["steps"] = static_cast<double>(r.steps);
  j["params"] = VectorJson(r.params);
  j["buffers"] = VectorJson(r.buffers);
  j["first_step_device_copies"] = r.first_step_device_copies;
  j["first_step_comm_staging"] = r.first_step_comm_staging;
  return j;
}

TrainResult FromJson(const results::Json& j) {
  auto field = [&](const char* k) { return j.at(k).get<double>(); };
  TrainResult r;
  for (const results::Json& e : j.at("val_error")) r.val_error.push_back(e.get<double>());
  r.train_error = field("train_error");
  r.rs_mean_err = field("rs_mean_err");
  r.rs_var_err = field("rs_var_err");
  r.rs_mean_err_before_precise = field("rs_mean_err_before_precise");
  r.rs_var_err_before_precise = field("rs_var_err_before_precise");
  r.rank_spread1 = field("rank_spread1");
  r.rank_spread2 = field("rank_spread2");
  r.steps = static_cast<int64_t>(field("steps"));
  r.params = JsonVector(j.at("params"));
  r.buffers = JsonVector(j.at("buffers"));
  r.first_step_device_copies = j.at("first_step_device_copies");
  r.first_step_comm_staging = j.at("first_step_comm_staging");
  return r;
}

}  // namespace ddp::small_batch_bn

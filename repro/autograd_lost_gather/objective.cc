#include "repro/autograd_lost_gather/objective.h"

#include <vector>

#include "core/device/device_allreduce.h"
#include "core/metrics/binary.h"
#include "repro/autograd_lost_gather/losses.h"

namespace ddp::autograd_lost_gather {
namespace {

// Owner rank of each row.
std::vector<int> Owners(std::span<const int64_t> counts) {
  std::vector<int> owner;
  for (std::size_t r = 0; r < counts.size(); ++r) owner.insert(owner.end(), counts[r], static_cast<int>(r));
  return owner;
}

Mat Stack(const Mat& top, const Mat& bottom) {
  Mat m(top.rows() + bottom.rows(), top.cols());
  m << top, bottom;
  return m;
}

std::vector<int64_t> Iota(int64_t from, int64_t n) {
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = from + i;
  return v;
}

}  // namespace

const char* Name(LossKind loss) { return loss == LossKind::kGlobal ? "global" : "per_rank"; }

EncoderOptions EncoderFor(LossKind loss, const ProblemOptions& o, uint64_t seed) {
  EncoderOptions e;
  e.in_features = o.task.dim;
  e.hidden = o.hidden;
  e.out_features = loss == LossKind::kGlobal ? 1 : o.embed_dim;
  e.seed = seed;
  return e;
}

Vec SerialGrad(Encoder& model, const Batch& global, LossKind loss, std::span<const int64_t> counts,
               KeyPaths paths, double loss_scale, double tau, double* objective) {
  const auto params = model.Params();
  nn::ZeroGrads(params);
  const double w = static_cast<double>(counts.size());
  const int64_t n = global.size();
  if (loss == LossKind::kGlobal) {
    const LossGrad lg = SoftAuc(model.Forward(global.x), global.labels);
    if (objective) *objective = lg.value;
    const double reach = paths == KeyPaths::kAll ? w : paths == KeyPaths::kOwnRank ? 1.0 : 0.0;
    model.Backward(lg.d_first * (loss_scale * reach / w));
  } else {
    const Mat out = model.Forward(Stack(global.a, global.b));
    const std::vector<int> owner = Owners(counts);
    KeyGradMask mask;
    if (paths == KeyPaths::kNone) {
      mask = [](int64_t, int64_t) { return false; };
    } else if (paths == KeyPaths::kOwnRank) {
      mask = [&owner](int64_t i, int64_t j) { return owner[i] == owner[j]; };
    }
    const LossGrad lg = InfoNce(out.topRows(n), out.bottomRows(n), Iota(0, n), tau,
                                loss_scale / static_cast<double>(n), mask);
    if (objective) *objective = lg.value / loss_scale;
    model.Backward(Stack(lg.d_first, lg.d_second));
  }
  return nn::FlattenGrads(params);
}

Vec RankGrad(comm::Comm& comm, Encoder& model, const Batch& local, LossKind loss,
             std::span<const int64_t> counts, GatherOp& op, double loss_scale, double tau,
             device::Device<double>* device) {
  op.set_device(device);
  const auto params = model.Params();
  nn::ZeroGrads(params);
  const int64_t n_total = Total(counts);
  const double w = comm.world_size();
  if (loss == LossKind::kGlobal) {
    const Mat scores = model.Forward(local.x);
    const Mat all_scores = op.Forward(comm, scores, counts);
    // Labels carry no gradient; they travel as in the seed's code (gathered).
    const std::vector<int32_t> mine(local.labels.begin(), local.labels.end());
    std::vector<std::size_t> label_counts(counts.begin(), counts.end());
    const std::vector<int32_t> all = comm.Allgatherv<int32_t>(mine, label_counts);
    const std::vector<int> labels(all.begin(), all.end());
    const LossGrad lg = SoftAuc(all_scores, labels);
    model.Backward(op.Backward(comm, lg.d_first * loss_scale));
  } else {
    const int64_t n = local.size();
    const Mat out = model.Forward(Stack(local.a, local.b));
    const Mat keys = op.Forward(comm, out.bottomRows(n), counts);
    const int64_t offset = Offsets(counts)[static_cast<std::size_t>(comm.rank())];
    const LossGrad lg = InfoNce(out.topRows(n), keys, Iota(offset, n), tau,
                                loss_scale * w / static_cast<double>(n_total));
    model.Backward(Stack(lg.d_first, op.Backward(comm, lg.d_second)));
  }
  // DDP: all-reduce (sum) the parameter gradients, divide by W.
  Vec flat = nn::FlattenGrads(params);
  device::AllreduceOnDevice(comm, device, std::span<double>(flat.data(), static_cast<std::size_t>(flat.size())),
                            device::CopyKind::kParameter);
  flat /= w;
  nn::UnflattenGrads(flat, params);
  return flat;
}

Evaluation Evaluate(Encoder& model, const Batch& held_out, LossKind loss, double tau) {
  Evaluation e;
  const int64_t n = held_out.size();
  if (loss == LossKind::kGlobal) {
    const Mat scores = model.Forward(held_out.x);
    e.loss = SoftAuc(scores, held_out.labels).value;
    const std::vector<double> s(scores.data(), scores.data() + scores.size());
    e.accuracy = metrics::RocAuc(s, held_out.labels);
  } else {
    const Mat anchors = model.Forward(held_out.a);
    const Mat keys = model.Forward(held_out.b);
    e.loss = InfoNce(anchors, keys, Iota(0, n), tau, 1.0 / static_cast<double>(n)).value;
    e.accuracy = TopOneRetrieval(anchors, keys, Iota(0, n));
  }
  return e;
}

}  // namespace ddp::autograd_lost_gather

// One DDP step of the two losses, distributed (RankGrad) and predicted in
// one process (SerialGrad), plus held-out evaluation.
//
// The full-batch objectives (N = total rows of the global batch, which rank
// r holds rows [offset_r, offset_r + n_r) of):
//   global   L = SoftAuc(f(x_1..x_N)): every rank evaluates this same L on
//            the gathered scores.
//   per-rank L = (1/N) sum_i l_i, l_i = InfoNCE of anchor f(a_i) against all
//            N keys f(b_j). Rank r's loss is L_r = (W/N) sum_{i in r} l_i, so
//            that DDP's average (1/W) sum_r grad L_r is grad L for any counts.
//            (With equal counts W/N = 1/n_r, the usual local mean; with
//            unequal ones a local mean would give the gradient of a weighted
//            mean instead, the mean_of_means bug, not this one.)
//
// What DDP computes: each rank backpropagates its own loss through the
// gather; the gradient that reaches rank r's rows is decided by the gather
// (KeyPaths); then the parameter gradients are all-reduced and divided by W.
// Summing that over ranks gives the closed forms SerialGrad evaluates:
//   global:   grad_avg = loss_scale * (C / W) * grad L, where C counts how
//             many ranks' (identical) losses reach each score: W with a
//             differentiable gather, 1 with local re-insertion (the own slot
//             only), 0 detached. So the seed's fix gives grad L / W, and
//             multiplying the loss by W (or summing instead of averaging
//             gradients) makes it exact.
//   per-rank: grad_avg = loss_scale * (1/N) sum_i [dl_i/dA_i dA_i + sum_j
//             m_ij dl_i/dK_j dK_j] with m_ij = 1 when anchor i's term reaches
//             key j: always (differentiable), only when i and j live on the
//             same rank (local re-insertion), never (detached). No scale
//             turns the masked sum into the full one: the seed's fix is biased.
#pragma once

#include <cstdint>
#include <span>

#include "core/comm/comm.h"
#include "core/device/device.h"
#include "repro/autograd_lost_gather/encoder.h"
#include "repro/autograd_lost_gather/gather_op.h"
#include "repro/autograd_lost_gather/task.h"

namespace ddp::autograd_lost_gather {

enum class LossKind { kGlobal, kPerRank };
const char* Name(LossKind loss);

// Which ranks' uses of a gathered row send gradient back to its owner.
enum class KeyPaths { kNone, kOwnRank, kAll };

struct ProblemOptions {
  TaskOptions task;
  int hidden = 32;
  int embed_dim = 16;  // per-rank loss; the global loss uses a 1-d score
  double tau = 0.5;    // InfoNCE temperature
};

EncoderOptions EncoderFor(LossKind loss, const ProblemOptions& options, uint64_t seed);

// One process, no communication: the averaged parameter gradient (flat, in
// Params() order) that W = counts.size() ranks produce (see above).
// paths = kAll, loss_scale = 1 is the gradient of the full-batch objective,
// whose value goes to *objective when given. Leaves it in the model's grads.
Vec SerialGrad(Encoder& model, const Batch& global, LossKind loss, std::span<const int64_t> counts,
               KeyPaths paths, double loss_scale, double tau, double* objective = nullptr);

// One rank of the DDP step: forward this rank's rows, gather through `op`,
// this rank's loss times loss_scale, backward through `op`, then all-reduce
// the parameter gradients and divide by W. Leaves the averaged gradient in
// the model's grads and returns it. Collective on every rank.
// `device` (--device): where the all-reduces run (nullptr: host buffers, as
// before; a device: the gradient uploaded, reduced there and downloaded,
// counted in its copies, one collective either way). `op` gets it too.
Vec RankGrad(comm::Comm& comm, Encoder& model, const Batch& local, LossKind loss,
             std::span<const int64_t> counts, GatherOp& op, double loss_scale, double tau,
             device::Device<double>* device = nullptr);

struct Evaluation {
  double loss = 0;      // the full-batch objective on held-out data
  double accuracy = 0;  // global: ROC AUC of the scores; per-rank: top-1 retrieval
};
Evaluation Evaluate(Encoder& model, const Batch& held_out, LossKind loss, double tau);

}  // namespace ddp::autograd_lost_gather

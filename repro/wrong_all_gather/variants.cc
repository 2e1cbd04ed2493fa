// The variants, each a mechanism people really hit:
//   raw_unequal         all_gather of per-rank tensors whose lengths differ,
//                       passed straight to the engine (strided sharding)
//   pad_no_trim         lengths exchanged, tensors padded to the longest and
//                       gathered, the padding never cut off again
//   misaligned          predictions gathered every step (step-major order),
//                       labels once per epoch (rank-major order)
//   sampler_duplicates  a correct gather of the DistributedSampler's shares,
//                       its padding repeats counted as samples
// Each engine result is compared with the one-process value and, for the
// deterministic variants, with the same wrong computation done serially
// (the closed form), so that the test asserts the symptom *and* its size.
#include "repro/wrong_all_gather/variants.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/comm/errors.h"
#include "core/exact/step_check.h"
#include "core/harness/error_record.h"
#include "repro/wrong_all_gather/death.h"
#include "repro/wrong_all_gather/rows.h"
#include "repro/wrong_all_gather/scenario.h"

namespace ddp::wrong_all_gather {
namespace {

using results::Json;

struct Gathered {
  std::vector<double> scores;
  std::vector<int> labels;
};

void Append(Gathered& g, const std::vector<Prediction>& ps) {
  for (const Prediction& p : ps) {
    g.scores.push_back(p.score);
    g.labels.push_back(p.label);
  }
}

std::vector<double> Scores(const std::vector<Prediction>& ps) {
  std::vector<double> v;
  for (const Prediction& p : ps) v.push_back(p.score);
  return v;
}

// Labels travel as floats, as `y.float()` in the seed's code.
std::vector<double> Labels(const std::vector<Prediction>& ps) {
  std::vector<double> v;
  for (const Prediction& p : ps) v.push_back(p.label);
  return v;
}

std::vector<int> ToInt(const std::vector<double>& v) {
  std::vector<int> out;
  for (double x : v) out.push_back(static_cast<int>(std::lround(x)));
  return out;
}

// ---- pad_no_trim ------------------------------------------------------

Gathered PadNoTrim(comm::Comm& comm, const std::vector<Prediction>& mine) {
  const int64_t n_local = static_cast<int64_t>(mine.size());
  const auto counts = comm.Allgather<int64_t>(std::span<const int64_t>(&n_local, 1));
  const int64_t max_len = *std::max_element(counts.begin(), counts.end());
  std::vector<double> s = Scores(mine), l = Labels(mine);
  s.resize(max_len, 0.0);  // zero padding: probability 0, label 0
  l.resize(max_len, 0.0);
  return {comm.Allgather<double>(s), ToInt(comm.Allgather<double>(l))};
}

Gathered PadNoTrimSerial(const Config& c) {
  std::vector<std::vector<Prediction>> shares;
  std::size_t max_len = 0;
  for (int r = 0; r < c.world_size; ++r) {
    shares.push_back(Flatten(RankShare(c, r)));
    max_len = std::max(max_len, shares.back().size());
  }
  Gathered g;
  for (auto& share : shares) {
    Append(g, share);
    g.scores.resize(g.scores.size() + max_len - share.size(), 0.0);
    g.labels.resize(g.labels.size() + max_len - share.size(), 0);
  }
  return g;
}

// ---- misaligned -------------------------------------------------------

Gathered Misaligned(comm::Comm& comm, const Batches& mine) {
  Gathered g;
  for (const auto& batch : mine) {  // every step: gather this step's scores
    const auto s = comm.Allgather<double>(Scores(batch));
    g.scores.insert(g.scores.end(), s.begin(), s.end());
  }
  g.labels = ToInt(comm.Allgather<double>(Labels(Flatten(mine))));  // once
  return g;
}

Gathered MisalignedSerial(const Config& c) {
  std::vector<Batches> shares;
  for (int r = 0; r < c.world_size; ++r) shares.push_back(RankShare(c, r));
  Gathered g;
  for (std::size_t step = 0; step < shares[0].size(); ++step) {
    for (const auto& share : shares) {
      for (const Prediction& p : share[step]) g.scores.push_back(p.score);
    }
  }
  for (const auto& share : shares) {
    for (const Prediction& p : Flatten(share)) g.labels.push_back(p.label);
  }
  return g;
}

// ---- sampler_duplicates -------------------------------------------------

Gathered Duplicates(comm::Comm& comm, const std::vector<Prediction>& mine) {
  return {comm.Allgather<double>(Scores(mine)), ToInt(comm.Allgather<double>(Labels(mine)))};
}

Gathered DuplicatesSerial(const Config& c) {
  Gathered g;
  for (int r = 0; r < c.world_size; ++r) Append(g, Flatten(RankShare(c, r)));
  return g;
}

// ---- the deterministic variants, over the seeds of a row ----------------

struct Stats {
  std::vector<double> auc, auc_err, ap_err, gap, ref_auc;
  int undefined = 0;
  std::string first_error;
  bool symptom_expected = false;  // the serial buggy value differs from the reference
};

void Accumulate(Stats& st, const Metrics& got, const Metrics& serial, const Metrics& ref) {
  if (!got.defined || !ref.defined) {
    ++st.undefined;
    if (st.first_error.empty()) st.first_error = got.defined ? ref.error : got.error;
    return;
  }
  st.auc.push_back(got.auc);
  st.ref_auc.push_back(ref.auc);
  st.auc_err.push_back(got.auc - ref.auc);
  st.ap_err.push_back(got.ap - ref.ap);
  st.gap.push_back(std::max(std::fabs(got.auc - serial.auc), std::fabs(got.ap - serial.ap)));
  if (std::fabs(serial.auc - ref.auc) > exact::kDoubleTolerance ||
      std::fabs(serial.ap - ref.ap) > exact::kDoubleTolerance) {
    st.symptom_expected = true;
  }
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
}

// One deterministic variant of a row, summarised over its seeds on rank 0.
struct VariantStats {
  double auc_min = 0;
  double auc_max = 0;
  double reference_auc = 0;  // the first measured seed's
  double auc_error_min = 0;
  double auc_error_median = 0;
  double auc_error_max = 0;
  double max_abs_auc_error = 0;
  double max_abs_ap_error = 0;
  double closed_form_gap = 0;  // engine vs the serial closed form, worst of AUC and AP
  bool symptom_expected = false;
  int undefined = 0;  // seeds where the AUC is undefined
  std::string undefined_reason;
  int seeds_measured = 0;
};
DDP_JSON_FIELDS(VariantStats, auc_min, auc_max, reference_auc, auc_error_min, auc_error_median,
                auc_error_max, max_abs_auc_error, max_abs_ap_error, closed_form_gap,
                symptom_expected, undefined, undefined_reason, seeds_measured)

// A row's stats per deterministic variant, by variant name.
using RowStats = std::map<std::string, VariantStats>;

VariantStats Summarize(const Stats& st) {
  auto abs_max = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m = std::max(m, std::fabs(x));
    return m;
  };
  VariantStats s;
  s.auc_min = Quantile(st.auc, 0);
  s.auc_max = Quantile(st.auc, 1);
  s.reference_auc = st.ref_auc.empty() ? 0.0 : st.ref_auc[0];
  s.auc_error_min = Quantile(st.auc_err, 0);
  s.auc_error_median = Quantile(st.auc_err, 0.5);
  s.auc_error_max = Quantile(st.auc_err, 1);
  s.max_abs_auc_error = abs_max(st.auc_err);
  s.max_abs_ap_error = abs_max(st.ap_err);
  s.closed_form_gap = abs_max(st.gap);
  s.symptom_expected = st.symptom_expected;
  s.undefined = st.undefined;
  s.undefined_reason = st.first_error;
  s.seeds_measured = static_cast<int>(st.auc.size());
  return s;
}

constexpr const char* kDeterministic[] = {"pad_no_trim", "misaligned", "sampler_duplicates"};

Sharding ShardingOf(const std::string& variant) {
  return (variant == "pad_no_trim" || variant == "raw_unequal") ? Sharding::kStrided
                                                                : Sharding::kPaddedSampler;
}

std::vector<RowStats> RunDeterministic(comm::Comm& comm, const std::vector<Row>& rows) {
  std::vector<RowStats> out;
  for (const Row& row : rows) {
    RowStats per_variant;
    for (const std::string variant : kDeterministic) {
      Stats st;
      for (int k = 0; k < row.seeds; ++k) {
        const Config c = row.At(ShardingOf(variant), k);
        const Batches mine = RankShare(c, comm.rank());
        Gathered got, serial;
        if (variant == "pad_no_trim") {
          got = PadNoTrim(comm, Flatten(mine));
          serial = PadNoTrimSerial(c);
        } else if (variant == "misaligned") {
          got = Misaligned(comm, mine);
          serial = MisalignedSerial(c);
        } else {
          got = Duplicates(comm, Flatten(mine));
          serial = DuplicatesSerial(c);
        }
        Accumulate(st, Compute(got.scores, got.labels), Compute(serial.scores, serial.labels),
                   Reference(c));
      }
      per_variant[variant] = Summarize(st);
    }
    out.push_back(per_variant);
  }
  return out;
}

// ---- raw_unequal --------------------------------------------------------

// A CommError in a few words: which error, in which collective, after how
// long (the full desync report is in the rank's log).
std::string Short(const comm::CommError& e) {
  const comm::FailureContext* ctx = nullptr;
  std::string kind = "CommError";
  if (const auto* d = dynamic_cast<const comm::DeadlineError*>(&e)) {
    ctx = &d->context();
    kind = "DeadlineError";
  } else if (const auto* p = dynamic_cast<const comm::PeerError*>(&e)) {
    ctx = &p->context();
    kind = "PeerError";
  }
  if (ctx == nullptr) return kind;
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s in %s #%lld after %.2f s", kind.c_str(), comm::Name(ctx->op),
                static_cast<long long>(ctx->seq), ctx->elapsed.count() / 1000.0);
  return buf;
}

// What one raw all_gather did on this rank.
struct GatherOutcome {
  bool returned = false;
  std::string error;                // the CommError in a few words, when it did not return
  long long gathered = 0;           // values received
  long long not_peer_data = 0;      // of them, not peer data (second gather: scores or labels)
  long long non_binary_labels = 0;  // second gather: received labels neither 0 nor 1
  Metrics metrics;                  // what this rank computes from what it received
};
DDP_JSON_FIELDS(GatherOutcome, returned, error, gathered, not_peer_data, non_binary_labels,
                metrics)

// The raw all_gather of `mine` (this rank's own count) in the dtype asked
// for: float64, the suite's scores, or float32, the post's tensors (the
// count of bytes a peer falls short by is what differs: 4 or 8 per missing
// element). Values come back as doubles; `out` starts at -1 everywhere.
void RawAllgather(comm::Comm& comm, const std::vector<double>& mine, std::vector<double>& out,
                  bool float32) {
  if (!float32) {
    comm.Allgather(mine.data(), out.data(), mine.size(), comm::DType::kFloat64);
    return;
  }
  const std::vector<float> send(mine.begin(), mine.end());
  std::vector<float> recv(out.size(), -1.0f);
  comm.Allgather(send.data(), recv.data(), send.size(), comm::DType::kFloat32);
  std::copy(recv.begin(), recv.end(), out.begin());
}

// A peer's value as it travelled: rounded to float when the gather was float32.
double AsSent(double v, bool float32) { return float32 ? static_cast<float>(v) : v; }

// The one-process AUC and AP of the scores as a float32 gather sends them:
// rounding to float can tie two scores that differ in double, so the double
// reference could differ from what an exact float32 gather gives. The raw
// row's strided shares hold every sample once (no padding).
Metrics ReferenceAsSent(const Config& c, bool float32) {
  if (!float32) return Reference(c);
  std::vector<double> scores;
  std::vector<int> labels;
  for (int r = 0; r < c.world_size; ++r) {
    for (const Prediction& p : Flatten(RankShare(c, r))) {
      scores.push_back(AsSent(p.score, true));
      labels.push_back(p.label);
    }
  }
  if (static_cast<int64_t>(scores.size()) != c.n) {
    throw std::logic_error("raw_unequal's shares do not hold every sample once");
  }
  return Compute(scores, labels);
}

// One rank's raw_unequal result: the scores' gather, then the labels' (run
// only when the first returned).
struct RawUnequalResult {
  long long count = 0;  // this rank's own number of samples
  GatherOutcome first;
  GatherOutcome second;
};
DDP_JSON_FIELDS(RawUnequalResult, count, first, second)

// Raw all_gathers with this rank's own count, scores first, then labels (as
// seed 000 gathers preds, then labels). Reports what this rank saw from
// each: whether the call returned, and how many received values are not
// the peers' data (a peer with fewer elements cannot have sent them all).
// For the FIRST gather also the AUC this rank would compute from it: the
// gathered scores paired with the labels of the samples at those positions
// (label 0 past a peer's data, the value of the post's zero-initialised
// label buffers): what rank 0 reports when nothing else fails.
RawUnequalResult RawUnequal(comm::Comm& comm, const Config& c, bool float32) {
  std::vector<std::vector<Prediction>> shares;
  for (int r = 0; r < c.world_size; ++r) shares.push_back(Flatten(RankShare(c, r)));
  const auto& mine = shares[comm.rank()];
  RawUnequalResult result;
  result.count = static_cast<long long>(mine.size());
  std::vector<double> scores(mine.size() * c.world_size, -1.0);
  std::vector<double> labels(mine.size() * c.world_size, -1.0);
  auto is_peer_score = [&](int r, std::size_t i, double v) {
    return i < shares[r].size() && v == AsSent(shares[r][i].score, float32);
  };
  GatherOutcome& first = result.first;
  try {
    RawAllgather(comm, Scores(mine), scores, float32);
  } catch (const comm::CommError& e) {
    first.error = Short(e);
    return result;
  }
  long long not_data = 0;
  std::vector<int> first_labels;
  for (int r = 0; r < c.world_size; ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      not_data += !is_peer_score(r, i, scores[r * mine.size() + i]);
      first_labels.push_back(i < shares[r].size() ? shares[r][i].label : 0);
    }
  }
  first.returned = true;
  first.gathered = static_cast<long long>(scores.size());
  first.not_peer_data = not_data;
  first.metrics = Compute(scores, first_labels);
  GatherOutcome& second = result.second;
  try {
    RawAllgather(comm, Labels(mine), labels, float32);
  } catch (const comm::CommError& e) {
    second.error = Short(e);
    return result;
  }
  long long both_not_data = 0, bad_labels = 0;
  for (int r = 0; r < c.world_size; ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::size_t pos = r * mine.size() + i;
      const bool real = is_peer_score(r, i, scores[pos]) && labels[pos] == shares[r][i].label;
      both_not_data += !real;
      bad_labels += !(labels[pos] == 0.0 || labels[pos] == 1.0);
    }
  }
  second.returned = true;
  second.gathered = static_cast<long long>(labels.size());
  second.not_peer_data = both_not_data;
  second.non_binary_labels = bad_labels;
  std::vector<int> int_labels;
  for (double l : labels) int_labels.push_back(l == 1.0 ? 1 : 0);
  second.metrics = Compute(scores, int_labels);
  return result;
}

// What one run of raw_unequal did, rank by rank.
struct RawRun {
  std::string first_text;  // the first gather, per rank
  std::string outcome;     // both gathers, per rank
  bool silent = false;     // a rank returned from its first gather with non-peer values
  bool any_failed = false;
  bool any_wrong = false;  // a returned gather held non-peer values or a wrong AUC
  std::string foreign;     // ranks that died of something other than the engine
  long long rank0_not_peer = -1;  // rank 0's first gather (-1: it did not return)
  Metrics rank0_first;
};

std::string MetricsText(const Metrics& m, const Metrics& ref) {
  if (!m.defined) return ", AUC undefined (" + m.error + ")";
  char buf[96];
  std::snprintf(buf, sizeof buf, ", AUC %.6f (error %+.3g)", m.auc, m.auc - ref.auc);
  return buf;
}

RawRun OneRawRun(const harness::CommonFlags& f, const Row& row, const Config& c, const Metrics& ref,
                 bool float32) {
  harness::WorldOptions wo = f.World(row.world_size);
  wo.checked = false;  // raw: the point is what the engine does
  const harness::WorldResult world =
      harness::RunWorld(wo, [&](comm::Comm& comm) { return Json(RawUnequal(comm, c, float32)); });
  RawRun run;
  for (std::size_t r = 0; r < world.run.ranks.size() || r < world.rank_values.size(); ++r) {
    // Null for a rank that returned nothing (it died).
    std::optional<RawUnequalResult> v;
    if (r < world.rank_values.size() && !world.rank_values[r].is_null()) {
      v = world.rank_values[r].get<RawUnequalResult>();
    }
    const std::string died =
        r < world.run.ranks.size() ? world.run.ranks[r].Describe() : std::string("no report");
    std::string first = "r" + std::to_string(r) + ": ";
    std::string both = first;
    if (v && v->first.returned) {
      const long long bad = v->first.not_peer_data;
      const Metrics& m = v->first.metrics;
      first += "returned, " + std::to_string(bad) + "/" + std::to_string(v->first.gathered) +
               " values not peer data" + MetricsText(m, ref);
      run.silent |= bad > 0;
      run.any_wrong |=
          bad > 0 || !m.defined || std::fabs(m.auc - ref.auc) > exact::kDoubleTolerance;
      if (r == 0) {
        run.rank0_not_peer = bad;
        run.rank0_first = m;
      }
    } else if (v) {
      first += v->first.error;
      run.any_failed = true;
    } else {
      first += died;  // e.g. "signal 6 (SIGABRT)"
      run.any_failed = true;
      // Only the engine's abort or a hang is the symptom (death.h).
      const bool known = r < world.run.ranks.size();
      if (!known || ClassifyDeath(world.run.ranks[r]) == Death::kForeign) {
        run.foreign += (run.foreign.empty() ? "r" : "; r") + std::to_string(r) + ": " + died;
      }
    }
    // The second gather ran only where the first returned.
    if (v && v->first.returned && v->second.returned) {
      const long long bad = v->second.not_peer_data;
      const Metrics& m = v->second.metrics;
      both += "returned, " + std::to_string(bad) + "/" + std::to_string(v->second.gathered) +
              " values not peer data" + MetricsText(m, ref);
      run.any_wrong |=
          bad > 0 || !m.defined || std::fabs(m.auc - ref.auc) > exact::kDoubleTolerance;
    } else if (v && v->first.returned) {
      both += v->second.error;
      run.any_failed = true;
    } else {
      both = first;  // it never got to the second gather
    }
    run.first_text += (run.first_text.empty() ? "" : "; ") + first;
    run.outcome += (run.outcome.empty() ? "" : "; ") + both;
  }
  return run;
}

}  // namespace

results::Record RawUnequalRecord(const harness::CommonFlags& f, const Row& row, int runs,
                                 const std::string& raw_dtype) {
  if (raw_dtype != "float64" && raw_dtype != "float32") {
    throw std::invalid_argument("raw_dtype must be float64 or float32, got '" + raw_dtype + "'");
  }
  const bool float32 = raw_dtype == "float32";
  const Config c = row.At(Sharding::kStrided, 0);
  results::Record rec;
  rec.bug = "wrong_all_gather";
  rec.kind = results::Kind::kRepro;
  rec.variant = "raw_unequal";
  rec.backend = f.backend;
  rec.world_size = row.world_size;
  rec.config = ConfigJson(row, Sharding::kStrided);
  rec.config["seeds"] = 1;  // undefined behaviour: the same data, repeated runs
  rec.config["runs"] = runs;
  rec.config["raw_dtype"] = raw_dtype;  // what the gathers sent (labels too)
  // Equal counts (W divides N): the raw all_gather is legitimate: a control.
  rec.control = row.n % row.world_size == 0;
  const Metrics ref = ReferenceAsSent(c, float32);
  rec.reference = Json(ref);
  int silent = 0, failed = 0, wrong = 0, foreign = 0;
  std::string foreign_example;
  long long rank0_bad_min = -1, rank0_bad_max = -1;
  double rank0_auc_min = 0, rank0_auc_max = 0;
  int rank0_auc_defined = 0, rank0_auc_undefined = 0;
  std::string first_example, outcome_example, undefined_reason;
  int example_run = 0;
  for (int k = 0; k < runs; ++k) {
    const RawRun run = OneRawRun(f, row, c, ref, float32);
    silent += run.silent;
    failed += run.any_failed;
    wrong += run.any_wrong;
    if (!run.foreign.empty()) {
      if (foreign++ == 0) foreign_example = "run " + std::to_string(k + 1) + ": " + run.foreign;
    }
    // Shown: run 1, or the first silent run (what a reader needs to see).
    if (k == 0 || (run.silent && silent == 1)) {
      first_example = run.first_text;
      outcome_example = run.outcome;
      example_run = k + 1;
    }
    if (run.silent && run.rank0_not_peer > 0) {
      rank0_bad_min = rank0_bad_min < 0 ? run.rank0_not_peer
                                        : std::min(rank0_bad_min, run.rank0_not_peer);
      rank0_bad_max = std::max(rank0_bad_max, run.rank0_not_peer);
      if (run.rank0_first.defined) {
        const double a = run.rank0_first.auc;
        rank0_auc_min = rank0_auc_defined ? std::min(rank0_auc_min, a) : a;
        rank0_auc_max = rank0_auc_defined ? std::max(rank0_auc_max, a) : a;
        ++rank0_auc_defined;
      } else {
        ++rank0_auc_undefined;
        undefined_reason = run.rank0_first.error;
      }
    }
  }
  rec.measured["runs"] = runs;
  rec.measured["silent_runs"] = silent;
  rec.measured["failed_runs"] = failed;
  // One run shown in full: the first silent one, else run 1.
  rec.measured["shown_run"] = example_run;
  rec.measured["first_gather"] = first_example;  // what each rank's first gather did
  rec.measured["outcome"] = outcome_example;     // both gathers
  if (rank0_bad_min >= 0) {
    // Rank 0 (where the post computes the AUC) over the runs it was silent in.
    rec.measured["rank0_not_peer_data_min"] = rank0_bad_min;
    rec.measured["rank0_not_peer_data_max"] = rank0_bad_max;
    rec.measured["rank0_peer_values"] =
        static_cast<long long>((row.world_size - 1) * (c.n + row.world_size - 1) / row.world_size);
    rec.measured["rank0_auc_defined_runs"] = rank0_auc_defined;
    if (rank0_auc_defined > 0) {
      rec.measured["rank0_auc_min"] = rank0_auc_min;
      rec.measured["rank0_auc_max"] = rank0_auc_max;
    }
    if (rank0_auc_undefined > 0) rec.measured["rank0_auc_undefined_reason"] = undefined_reason;
  }
  rec.measured["ranks_failed"] = failed > 0;
  rec.measured["wrong_values"] = wrong > 0;
  rec.measured["foreign_failed_runs"] = foreign;
  if (foreign > 0) {
    // A rank killed from outside or crashing in our code: what the engine
    // did in that run is unknown, so the row proves nothing either way.
    rec.verdict = results::Verdict::kError;
    rec.error = std::to_string(foreign) + " of " + std::to_string(runs) +
                " runs had a rank die of something other than the engine (" + foreign_example +
                "): killed from outside, stopped, or a crash of ours; rerun on a quiet machine";
    return rec;
  }
  if (rec.control) {
    rec.verdict = (failed == 0 && wrong == 0) ? results::Verdict::kControl
                                              : results::Verdict::kControlFailed;
  } else {
    rec.verdict = (failed > 0 || wrong > 0) ? results::Verdict::kReproduced
                                            : results::Verdict::kNotReproduced;
  }
  return rec;
}

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, bool sweep, int raw_runs,
                                      bool raw_only, const std::string& raw_dtype) {
  const std::vector<Row> all_rows = Rows(f, sweep);
  std::vector<results::Record> records;
  if (raw_only) {  // the post's row only: many runs of one engine's undefined behaviour
    for (const Row& row : all_rows) {
      if (row.n == f.n && row.batch_size == f.batch_size) {
        records.push_back(RawUnequalRecord(f, row, raw_runs, raw_dtype));
      }
    }
    return records;
  }
  for (int w : WorldSizes(all_rows)) {
    const std::vector<Row> rows = RowsOf(all_rows, w);
    std::fprintf(stderr, "wrong_all_gather: W=%d, %zu configurations x %d seeds...\n", w,
                 rows.size(), f.seeds);
    for (const Row& row : rows) records.push_back(RawUnequalRecord(f, row, raw_runs, raw_dtype));
    const harness::WorldResult world = harness::RunWorld(
        f.World(w), [&](comm::Comm& comm) { return Json(RunDeterministic(comm, rows)); });
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (const std::string variant : kDeterministic) {
        results::Record rec;
        rec.bug = "wrong_all_gather";
        rec.kind = results::Kind::kRepro;
        rec.variant = variant;
        rec.backend = f.backend;
        rec.world_size = w;
        rec.config = ConfigJson(rows[i], ShardingOf(variant));
        if (harness::KeptAsError(world, rec, records)) continue;
        const VariantStats v = world.value[i].get<RowStats>().at(variant);
        rec.reference["auc"] = v.reference_auc;
        rec.measured["auc_min"] = v.auc_min;
        rec.measured["auc_max"] = v.auc_max;
        rec.measured["auc_error_min"] = v.auc_error_min;
        rec.measured["auc_error_median"] = v.auc_error_median;
        rec.measured["auc_error_max"] = v.auc_error_max;
        rec.measured["max_abs_ap_error"] = v.max_abs_ap_error;
        rec.measured["closed_form_gap"] = v.closed_form_gap;
        rec.measured["seeds_measured"] = v.seeds_measured;
        rec.measured["undefined"] = v.undefined;
        rec.measured["error"] = v.max_abs_auc_error;
        const double err = std::max(v.max_abs_auc_error, v.max_abs_ap_error);
        const double gap = v.closed_form_gap;
        rec.control = !v.symptom_expected;
        if (v.seeds_measured == 0) {
          rec.verdict = results::Verdict::kError;
          rec.error = "AUC undefined for every seed: " + v.undefined_reason;
        } else if (rec.control) {
          rec.verdict = err <= exact::kDoubleTolerance ? results::Verdict::kControl
                                                       : results::Verdict::kControlFailed;
        } else {
          rec.verdict = (err > exact::kDoubleTolerance && gap <= exact::kDoubleTolerance)
                            ? results::Verdict::kReproduced
                            : results::Verdict::kNotReproduced;
        }
        records.push_back(rec);
      }
    }
  }
  return records;
}

}  // namespace ddp::wrong_all_gather

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

#include "core/comm/errors.h"
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
  if (std::fabs(serial.auc - ref.auc) > 1e-12 || std::fabs(serial.ap - ref.ap) > 1e-12) {
    st.symptom_expected = true;
  }
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(std::lround(q * static_cast<double>(v.size() - 1)))];
}

Json StatsJson(const Stats& st) {
  Json j;
  auto abs_max = [](const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m = std::max(m, std::fabs(x));
    return m;
  };
  j["auc_min"] = Quantile(st.auc, 0);
  j["auc_max"] = Quantile(st.auc, 1);
  j["reference_auc"] = st.ref_auc.empty() ? 0.0 : st.ref_auc[0];
  j["auc_error_min"] = Quantile(st.auc_err, 0);
  j["auc_error_median"] = Quantile(st.auc_err, 0.5);
  j["auc_error_max"] = Quantile(st.auc_err, 1);
  j["max_abs_auc_error"] = abs_max(st.auc_err);
  j["max_abs_ap_error"] = abs_max(st.ap_err);
  j["closed_form_gap"] = abs_max(st.gap);
  j["symptom_expected"] = st.symptom_expected;
  j["undefined"] = st.undefined;
  j["undefined_reason"] = st.first_error;
  j["seeds_measured"] = static_cast<int>(st.auc.size());
  return j;
}

constexpr const char* kDeterministic[] = {"pad_no_trim", "misaligned", "sampler_duplicates"};

Sharding ShardingOf(const std::string& variant) {
  return (variant == "pad_no_trim" || variant == "raw_unequal") ? Sharding::kStrided
                                                                : Sharding::kPaddedSampler;
}

Json RunDeterministic(comm::Comm& comm, const std::vector<Row>& rows) {
  Json out = Json::MakeArray();
  for (const Row& row : rows) {
    Json per_variant;
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
      per_variant[variant] = StatsJson(st);
    }
    out.Push(per_variant);
  }
  return out;
}

// ---- raw_unequal --------------------------------------------------------

// Raw all_gather with this rank's own count. Reports what this rank saw:
// whether the call returned, and how many received values are not the
// peers' data (a peer with fewer elements cannot have sent them all).
Json RawUnequal(comm::Comm& comm, const Config& c) {
  std::vector<std::vector<Prediction>> shares;
  for (int r = 0; r < c.world_size; ++r) shares.push_back(Flatten(RankShare(c, r)));
  const auto& mine = shares[comm.rank()];
  Json j;
  j["count"] = static_cast<long long>(mine.size());
  std::vector<double> scores(mine.size() * c.world_size, -1.0);
  std::vector<double> labels(mine.size() * c.world_size, -1.0);
  try {
    comm.Allgather(Scores(mine).data(), scores.data(), mine.size(), comm::DType::kFloat64);
    comm.Allgather(Labels(mine).data(), labels.data(), mine.size(), comm::DType::kFloat64);
  } catch (const comm::CommError& e) {
    // Short: which error, in which collective, after how long (the full
    // desync report is in the rank's log).
    const comm::FailureContext* ctx = nullptr;
    std::string kind = "CommError";
    if (const auto* d = dynamic_cast<const comm::DeadlineError*>(&e)) {
      ctx = &d->context();
      kind = "DeadlineError";
    } else if (const auto* p = dynamic_cast<const comm::PeerError*>(&e)) {
      ctx = &p->context();
      kind = "PeerError";
    }
    char buf[160];
    if (ctx != nullptr) {
      std::snprintf(buf, sizeof buf, "%s in %s #%lld after %.2f s", kind.c_str(),
                    comm::Name(ctx->op), static_cast<long long>(ctx->seq),
                    ctx->elapsed.count() / 1000.0);
    } else {
      std::snprintf(buf, sizeof buf, "%s", kind.c_str());
    }
    j["completed"] = false;
    j["error"] = buf;
    return j;
  }
  long long not_data = 0, bad_labels = 0;
  for (int r = 0; r < c.world_size; ++r) {
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::size_t pos = r * mine.size() + i;
      const bool real = i < shares[r].size() && scores[pos] == shares[r][i].score &&
                        labels[pos] == shares[r][i].label;
      not_data += !real;
      bad_labels += !(labels[pos] == 0.0 || labels[pos] == 1.0);
    }
  }
  j["completed"] = true;
  j["gathered"] = static_cast<long long>(scores.size());
  j["not_peer_data"] = not_data;
  j["non_binary_labels"] = bad_labels;
  std::vector<int> int_labels;
  for (double l : labels) int_labels.push_back(l == 1.0 ? 1 : 0);
  j["metrics"] = ToJson(Compute(scores, int_labels));
  return j;
}

results::Record RawUnequalRecord(const harness::CommonFlags& f, const Row& row) {
  const Config c = row.At(Sharding::kStrided, 0);
  results::Record rec;
  rec.bug = "wrong_all_gather";
  rec.kind = results::Kind::kRepro;
  rec.variant = "raw_unequal";
  rec.backend = f.backend;
  rec.world_size = row.world_size;
  rec.config = ConfigJson(row, Sharding::kStrided);
  rec.config["seeds"] = 1;  // undefined behaviour: one run per configuration
  // Equal counts (W divides N): the raw all_gather is legitimate: a control.
  rec.control = row.n % row.world_size == 0;
  harness::WorldOptions wo = f.World(row.world_size);
  wo.checked = false;  // raw: the point is what the engine does
  const harness::WorldResult world =
      harness::RunWorld(wo, [&](comm::Comm& comm) { return RawUnequal(comm, c); });
  const Metrics ref = Reference(c);
  rec.reference = ToJson(ref);
  std::string outcome;
  bool any_failed = false, any_wrong = false;
  for (std::size_t r = 0; r < world.run.ranks.size() || r < world.rank_values.size(); ++r) {
    const Json* v = r < world.rank_values.size() && !world.rank_values[r].IsNull()
                        ? &world.rank_values[r]
                        : nullptr;
    std::string text = "r" + std::to_string(r) + ": ";
    if (v != nullptr && v->Find("completed")->AsBool()) {
      const long long bad = static_cast<long long>(v->Find("not_peer_data")->AsDouble());
      const Metrics m = MetricsFromJson(*v->Find("metrics"));
      text += "returned, " + std::to_string(bad) + "/" +
              std::to_string(static_cast<long long>(v->Find("gathered")->AsDouble())) +
              " values not peer data";
      if (m.defined) {
        char buf[96];
        std::snprintf(buf, sizeof buf, ", AUC %.6f (error %+.3g)", m.auc, m.auc - ref.auc);
        text += buf;
        any_wrong |= std::fabs(m.auc - ref.auc) > 1e-12;
        if (r == 0) rec.measured["auc_rank0"] = m.auc;
      } else {
        text += ", AUC undefined: " + m.error;
        any_wrong = true;
      }
      any_wrong |= bad > 0;
    } else if (v != nullptr) {
      text += v->Find("error")->AsString();
      any_failed = true;
    } else if (r < world.run.ranks.size()) {
      text += world.run.ranks[r].Describe();  // e.g. "signal 6 (SIGABRT)"
      any_failed = true;
    }
    outcome += (outcome.empty() ? "" : "; ") + text;
  }
  rec.measured["outcome"] = outcome;
  rec.measured["ranks_failed"] = any_failed;
  rec.measured["wrong_values"] = any_wrong;
  if (rec.control) {
    rec.verdict = (!any_failed && !any_wrong) ? results::Verdict::kControl
                                              : results::Verdict::kControlFailed;
  } else {
    rec.verdict = (any_failed || any_wrong) ? results::Verdict::kReproduced
                                            : results::Verdict::kNotReproduced;
  }
  return rec;
}

}  // namespace

std::vector<results::Record> RunRepro(const harness::CommonFlags& f, bool sweep) {
  const std::vector<Row> all_rows = Rows(f, sweep);
  std::vector<results::Record> records;
  for (int w : WorldSizes(all_rows)) {
    const std::vector<Row> rows = RowsOf(all_rows, w);
    std::fprintf(stderr, "wrong_all_gather: W=%d, %zu configurations x %d seeds...\n", w,
                 rows.size(), f.seeds);
    for (const Row& row : rows) records.push_back(RawUnequalRecord(f, row));
    const harness::WorldResult world = harness::RunWorld(
        f.World(w), [&](comm::Comm& comm) { return RunDeterministic(comm, rows); });
    for (std::size_t i = 0; i < rows.size(); ++i) {
      for (const std::string variant : kDeterministic) {
        results::Record rec;
        rec.bug = "wrong_all_gather";
        rec.kind = results::Kind::kRepro;
        rec.variant = variant;
        rec.backend = f.backend;
        rec.world_size = w;
        rec.config = ConfigJson(rows[i], ShardingOf(variant));
        if (!world.ok) {
          rec.verdict = results::Verdict::kError;
          rec.error = world.failure;
          records.push_back(rec);
          continue;
        }
        const Json& v = *world.value.AsArray()[i].Find(variant);
        rec.reference["auc"] = v.Find("reference_auc")->AsDouble();
        for (const char* key : {"auc_min", "auc_max", "auc_error_min", "auc_error_median",
                                "auc_error_max", "max_abs_ap_error", "closed_form_gap",
                                "seeds_measured", "undefined"}) {
          rec.measured[key] = v.Find(key)->AsDouble();
        }
        rec.measured["error"] = v.Find("max_abs_auc_error")->AsDouble();
        const double err = std::max(v.Find("max_abs_auc_error")->AsDouble(),
                                    v.Find("max_abs_ap_error")->AsDouble());
        const double gap = v.Find("closed_form_gap")->AsDouble();
        rec.control = !v.Find("symptom_expected")->AsBool();
        if (v.Find("seeds_measured")->AsDouble() == 0) {
          rec.verdict = results::Verdict::kError;
          rec.error = "AUC undefined for every seed: " + v.Find("undefined_reason")->AsString();
        } else if (rec.control) {
          rec.verdict = err <= 1e-12 ? results::Verdict::kControl
                                     : results::Verdict::kControlFailed;
        } else {
          rec.verdict = (err > 1e-12 && gap <= 1e-12) ? results::Verdict::kReproduced
                                                      : results::Verdict::kNotReproduced;
        }
        records.push_back(rec);
      }
    }
  }
  return records;
}

}  // namespace ddp::wrong_all_gather

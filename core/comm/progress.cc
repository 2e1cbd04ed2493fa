#include "core/comm/progress.h"

#include <sstream>

namespace ddp::comm {
namespace {

constexpr const char* kStateNames[] = {"ready", "entered", "failed", "finished"};

std::string RankList(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace

std::string ProgressRecord::Encode() const {
  return std::string(kStateNames[static_cast<int>(state)]) + " " + std::to_string(seq) + " " +
         Name(op);
}

std::optional<ProgressRecord> ProgressRecord::Decode(const std::string& text) {
  std::istringstream in(text);
  std::string state, op;
  ProgressRecord r;
  if (!(in >> state >> r.seq >> op)) return std::nullopt;
  bool found = false;
  for (int i = 0; i < 4; ++i) {
    if (state == kStateNames[i]) {
      r.state = static_cast<State>(i);
      found = true;
    }
  }
  if (!found) return std::nullopt;
  found = false;
  for (int i = 0; i <= static_cast<int>(OpKind::kBarrier); ++i) {
    if (op == Name(static_cast<OpKind>(i))) {
      r.op = static_cast<OpKind>(i);
      found = true;
    }
  }
  if (!found) return std::nullopt;
  return r;
}

Progress::Progress(std::shared_ptr<launch::Store> store, int rank, int world_size, bool enabled)
    : store_(std::move(store)), rank_(rank), world_size_(world_size), enabled_(enabled) {}

void Progress::Record(const ProgressRecord& record) {
  if (!enabled_) return;
  store_->Put(Key(rank_), record.Encode());
}

std::vector<std::optional<ProgressRecord>> Progress::ReadAll() {
  std::vector<std::optional<ProgressRecord>> out(world_size_);
  if (!enabled_) return out;
  for (int r = 0; r < world_size_; ++r) {
    try {
      if (const auto text = store_->TryGet(Key(r))) out[r] = ProgressRecord::Decode(*text);
    } catch (const std::exception&) {
      // A report is best effort: an unreadable record reads as "no record".
    }
  }
  return out;
}

std::string FormatDesyncReport(int my_rank, int64_t seq, OpKind op,
                               const std::vector<std::optional<ProgressRecord>>& records,
                               bool records_enabled) {
  std::ostringstream out;
  if (!records_enabled) {
    out << "desync report unavailable: progress records are off (DDP_PITFALLS_PROGRESS=0)";
    return out.str();
  }
  out << "desync report for collective #" << seq << " (" << Name(op)
      << "), last record of each rank in the rendezvous store:";
  std::vector<int> never_entered, ahead, finished;
  for (size_t r = 0; r < records.size(); ++r) {
    out << "\n  rank " << r << ": ";
    const auto& rec = records[r];
    if (!rec) {
      out << "no record (never created this communicator?)";
      never_entered.push_back(static_cast<int>(r));
    } else {
      using S = ProgressRecord::State;
      switch (rec->state) {
        case S::kReady:
          out << "created the communicator, entered no collective";
          break;
        case S::kEntered:
          out << "entered " << Name(rec->op) << " #" << rec->seq;
          out << (rec->seq == 0 ? " (its first collective)"
                                : " (completed up to #" + std::to_string(rec->seq - 1) + ")");
          break;
        case S::kFailed:
          out << "failed in " << Name(rec->op) << " #" << rec->seq;
          break;
        case S::kFinished:
          if (rec->seq < 0) {
            out << "finished normally without any collective";
          } else {
            out << "finished normally after " << Name(rec->op) << " #" << rec->seq;
          }
          finished.push_back(static_cast<int>(r));
          break;
      }
      const bool in_or_past = (rec->state == S::kEntered || rec->state == S::kFailed)
                                  ? rec->seq >= seq
                                  : false;
      if (!in_or_past) never_entered.push_back(static_cast<int>(r));
      if (rec->state == S::kEntered && rec->seq > seq) ahead.push_back(static_cast<int>(r));
      if (rec->state == S::kFinished && rec->seq >= seq) {
        // Finished after completing #seq: it was there, then moved on.
        never_entered.pop_back();
        ahead.push_back(static_cast<int>(r));
      }
    }
    if (static_cast<int>(r) == my_rank) out << "  <- this rank";
  }
  out << "\n  never entered #" << seq << ": "
      << (never_entered.empty() ? "none" : RankList(never_entered));
  if (!ahead.empty()) out << "\n  already past #" << seq << ": " << RankList(ahead);
  return out.str();
}

}  // namespace ddp::comm

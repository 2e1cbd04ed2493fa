#include "core/trace/model.h"

namespace ddp::trace {
namespace {

constexpr const char* kStateNames[] = {"entered", "completed", "timed_out", "peer_failed",
                                       "check_failed"};

}  // namespace

const char* Name(State state) { return kStateNames[static_cast<int>(state)]; }

std::optional<State> ParseState(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(State::kCheckFailed); ++i) {
    if (name == kStateNames[i]) return static_cast<State>(i);
  }
  return std::nullopt;
}

const CommTrace* RankDump::Find(const std::string& comm_name) const {
  for (const CommTrace& c : comms) {
    if (c.name == comm_name) return &c;
  }
  return nullptr;
}

std::string Describe(const TraceEntry& e) {
  std::string s = comm::Name(e.op);
  if (e.op == comm::OpKind::kBarrier) return s;
  if (e.reduce >= 0 && e.reduce != static_cast<int>(comm::ReduceOp::kSum)) {
    s += std::string("(") + comm::Name(static_cast<comm::ReduceOp>(e.reduce)) + ")";
  }
  if (e.root >= 0) s += "(root " + std::to_string(e.root) + ")";
  s += std::string(" ") + comm::Name(e.dtype) + " x";
  if (e.op != comm::OpKind::kAllgatherv) return s + std::to_string(e.count);
  s += "[";
  for (std::size_t i = 0; i < e.counts.size(); ++i) {
    s += (i ? ", " : "") + std::to_string(e.counts[i]);
  }
  return s + "]";
}

std::string FileLine(const CallSite& site) { return site.file + ":" + std::to_string(site.line); }

std::string ShortFunction(const std::string& function_name) {
  // "int ns::{anonymous}::RankMain(const X&, ...)" -> "RankMain"; for a
  // lambda, the function it is defined in.
  std::string s = function_name.substr(0, function_name.find('('));
  const auto space = s.rfind(' ');
  if (space != std::string::npos) s = s.substr(space + 1);
  const auto colons = s.rfind("::");
  if (colons != std::string::npos) s = s.substr(colons + 2);
  return s;
}

}  // namespace ddp::trace

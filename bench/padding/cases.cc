#include "bench/padding/cases.h"

#include <regex>
#include <stdexcept>

namespace ddp::bench {

std::vector<Method> Methods(const std::string& backend, int world_size) {
  std::vector<Method> m = {Method::kFloorAllgather, Method::kFloorAllgatherv,
                           Method::kPadGatherTrim,  Method::kAllgatherv,
                           Method::kKnownCounts,    Method::kBoundedPad};
  if (backend == "gloo" && world_size >= 3) {
    // The direct exchange: a floor beside the others, so the floor stays the
    // fastest equal-count gather whichever algorithm wins on the machine.
    m.insert(m.begin() + 2, Method::kFloorAllgathervDirect);
    m.push_back(Method::kKnownCountsDirect);
  }
  if (backend == "nccl") {
    m.push_back(Method::kGroupedBroadcast);
    m.push_back(Method::kGroupedSendRecv);
  }
  return m;
}

std::vector<Case> BuildCases(const CaseOptions& options) {
  std::string pattern = options.filter;
  bool negate = false;
  if (!pattern.empty() && pattern[0] == '-') {
    negate = true;
    pattern = pattern.substr(1);
  }
  if (pattern.empty() || pattern == "all") pattern = ".";
  std::regex re;
  try {
    re = std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw std::invalid_argument("--benchmark_filter: '" + options.filter +
                                "' is not a valid regular expression (" + e.what() + ")");
  }
  std::vector<Case> out;
  int group = 0;
  for (Profile p : options.profiles) {
    for (std::int64_t payload : options.payloads) {
      std::vector<Case> cases;
      bool keep_group = false;
      for (Method m : Methods(options.backend, options.world_size)) {
        Case c;
        c.profile = p;
        c.payload_bytes = payload;
        c.method = m;
        c.group = group;
        c.lengths = Lengths(p, options.world_size, payload / kElementBytes);
        c.name = "padding/" + options.backend + "/W" + std::to_string(options.world_size) + "/" +
                 Name(p) + "/" + PayloadName(payload) + "/" + Name(m);
        const bool selected = std::regex_search(c.name, re) != negate;
        keep_group = keep_group || selected;
        if (IsFloor(m) || selected) cases.push_back(std::move(c));
      }
      if (keep_group) {
        for (Case& c : cases) out.push_back(std::move(c));
        ++group;
      }
    }
  }
  return out;
}

}  // namespace ddp::bench

// The benchmark cases of one run: every (profile, payload) group, its two
// floor methods first (so each method's ratio over the floor comes from the
// same repetition of the same run), then the methods the backend has.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/padding/profiles.h"

namespace ddp::bench {

struct Case {
  Profile profile = Profile::kEqual;
  std::int64_t payload_bytes = 0;  // nominal per rank
  Method method = Method::kFloorAllgather;
  int group = 0;                   // index of its (profile, payload) group
  std::vector<std::int64_t> lengths;
  std::string name;                // "padding/gloo/W4/straggler/1MiB/allgatherv"
};

struct CaseOptions {
  std::string backend = "gloo";
  int world_size = 4;
  std::vector<Profile> profiles;
  std::vector<std::int64_t> payloads;  // bytes
  // ECMAScript regex over Case::name, as --benchmark_filter; a leading '-'
  // negates it. Empty or "all": every case. A group's floors are kept
  // whenever one of its methods is, so no ratio lacks its floor.
  std::string filter;
};

// The methods of a backend at a world size, the floors first. The Gloo
// direct-exchange twins only from W = 3: at W = 2 the direct exchange and
// the ring make the same calls (each rank's block to the one peer, in the
// same pieces from 1 MiB up), and a duplicate floor would only lower the
// floor by the noise of taking the minimum of one more timing.
std::vector<Method> Methods(const std::string& backend, int world_size);

// Throws std::invalid_argument for a filter that is not a valid regex.
std::vector<Case> BuildCases(const CaseOptions& options);

}  // namespace ddp::bench

#include "core/device/copy_json.h"

namespace ddp::device {

results::Json ToJson(const CopyTally& t) {
  results::Json j = results::Json::object();
  j["calls"] = t.calls;
  j["bytes"] = t.bytes;
  return j;
}

results::Json ToJson(const CopyCount& c) {
  results::Json j = results::Json::object();
  j["h2d"] = ToJson(c.H2d());
  j["d2h"] = ToJson(c.D2h());
  for (int k = 0; k < kCopyKinds; ++k) {
    results::Json by = results::Json::object();
    by["h2d"] = ToJson(c.h2d[k]);
    by["d2h"] = ToJson(c.d2h[k]);
    j[ToString(static_cast<CopyKind>(k))] = by;
  }
  return j;
}

results::Json StagingJson(const comm::Comm::StagedCopies& before, const comm::Comm::StagedCopies& after) {
  results::Json j = results::Json::object();
  j["h2d"] = ToJson(CopyTally{after.h2d_calls - before.h2d_calls, after.h2d_bytes - before.h2d_bytes});
  j["d2h"] = ToJson(CopyTally{after.d2h_calls - before.d2h_calls, after.d2h_bytes - before.d2h_bytes});
  return j;
}

}  // namespace ddp::device

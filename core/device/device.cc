#include "core/device/device.h"

namespace ddp::device {
namespace {

CopyTally Sum(const CopyTally (&t)[kCopyKinds]) {
  CopyTally out;
  for (const CopyTally& x : t) {
    out.calls += x.calls;
    out.bytes += x.bytes;
  }
  return out;
}

}  // namespace

const char* ToString(CopyKind k) {
  switch (k) {
    case CopyKind::kActivation: return "activation";
    case CopyKind::kParameter: return "parameter";
    case CopyKind::kStatistic: return "statistic";
    case CopyKind::kPrediction: return "prediction";
  }
  return "?";
}

CopyTally CopyCount::H2d() const { return Sum(h2d); }
CopyTally CopyCount::D2h() const { return Sum(d2h); }

CopyCount CopyCount::operator-(const CopyCount& earlier) const {
  CopyCount out = *this;
  for (int k = 0; k < kCopyKinds; ++k) {
    out.h2d[k].calls -= earlier.h2d[k].calls;
    out.h2d[k].bytes -= earlier.h2d[k].bytes;
    out.d2h[k].calls -= earlier.d2h[k].calls;
    out.d2h[k].bytes -= earlier.d2h[k].bytes;
  }
  return out;
}

}  // namespace ddp::device

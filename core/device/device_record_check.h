// (tests) A pair's record on a device against the same record on the host:
// the device changes where the all-reduces run, never what they compute,
// so every measured value must be the host run's exactly; only
// config.device and measured.device_copies differ.
#pragma once

#include <string>

#include "core/results/record.h"
#include "gtest/gtest.h"

namespace ddp::device {

// Expects config.device "host" / `on`, no device_copies on the host record
// and every other measured value equal; returns the device record's
// measured.device_copies (null when it has none: a failure is reported).
inline results::Json ExpectSameAsHost(const results::Record& host, const results::Record& dev,
                                      const std::string& on) {
  EXPECT_EQ(host.config.at("device"), "host");
  EXPECT_EQ(dev.config.at("device"), on);
  EXPECT_FALSE(host.measured.contains("device_copies"));
  results::Json measured = dev.measured;
  EXPECT_TRUE(measured.contains("device_copies"));
  const results::Json copies = measured.contains("device_copies") ? measured.at("device_copies") : results::Json();
  measured.erase("device_copies");
  EXPECT_EQ(measured, host.measured);
  return copies;
}

}  // namespace ddp::device

// DistributedSampler and randperm against vectors written by PyTorch 1.13
// itself (golden/gen_golden.py): every rank of W = 1..8, N from 0 to 1003
// and 100003, shuffle/drop_last, seeds that wrap and overflow.
#include <string>

#include "core/data/sampler.h"
#include "core/data/testing/golden_reader.h"
#include "core/data/torch_randperm.h"
#include "gtest/gtest.h"

namespace ddp::data {
namespace {

using golden::Line;

const std::vector<Line>& Golden() {
  static const auto* lines = new std::vector<Line>(
      golden::ReadLines(golden::RunfilePath("core/data/golden/sampler_golden.txt")));
  return *lines;
}

struct SamplerCase {
  int64_t n;
  DistributedSamplerOptions options;
  int64_t epoch;
};

SamplerCase ParseSamplerCase(const Line& line) {
  EXPECT_EQ(line.fields.size(), 7u) << "line " << line.line_number;
  SamplerCase c;
  c.n = std::stoll(line.fields[0]);
  c.options.num_replicas = std::stoll(line.fields[1]);
  c.options.rank = std::stoll(line.fields[2]);
  c.options.shuffle = line.fields[3] == "1";
  c.options.seed = std::stoll(line.fields[4]);
  c.options.drop_last = line.fields[5] == "1";
  c.epoch = std::stoll(line.fields[6]);
  return c;
}

std::vector<int64_t> RunSampler(const SamplerCase& c) {
  DistributedSampler sampler(c.n, c.options);
  sampler.SetEpoch(c.epoch);
  std::vector<int64_t> indices = sampler.Indices();
  EXPECT_EQ(static_cast<int64_t>(indices.size()), sampler.Size());
  return indices;
}

TEST(SamplerGolden, FileHasEveryKind) {
  int randperm = 0, sampler = 0, digests = 0, errors = 0;
  for (const Line& line : Golden()) {
    randperm += line.kind == "randperm";
    sampler += line.kind == "sampler";
    digests += line.kind == "sampler_digest" || line.kind == "randperm_digest";
    errors += line.kind == "sampler_error";
  }
  EXPECT_EQ(randperm, 80);
  EXPECT_GT(sampler, 6000);
  EXPECT_EQ(digests, 40);
  EXPECT_EQ(errors, 4);
}

TEST(SamplerGolden, RandpermMatchesTorch) {
  int checked = 0;
  for (const Line& line : Golden()) {
    if (line.kind == "randperm") {
      const int64_t n = std::stoll(line.fields[0]), seed = std::stoll(line.fields[1]);
      ASSERT_EQ(TorchRandperm(n, seed), golden::ParseIndexList(line.payload))
          << "line " << line.line_number << ": n=" << n << " seed=" << seed;
      ++checked;
    } else if (line.kind == "randperm_digest" && std::stoll(line.fields[0]) < 10000000) {
      // n >= 2e8 lives in randperm_large_test.
      const int64_t n = std::stoll(line.fields[0]), seed = std::stoll(line.fields[1]);
      ASSERT_EQ(golden::Digest(TorchRandperm(n, seed)), line.payload) << "line " << line.line_number;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 82);
}

TEST(SamplerGolden, IndexListsMatchTorch) {
  int checked = 0;
  for (const Line& line : Golden()) {
    if (line.kind == "sampler") {
      ASSERT_EQ(RunSampler(ParseSamplerCase(line)), golden::ParseIndexList(line.payload))
          << "line " << line.line_number;
      ++checked;
    } else if (line.kind == "sampler_digest") {
      ASSERT_EQ(golden::Digest(RunSampler(ParseSamplerCase(line))), line.payload)
          << "line " << line.line_number;
      ++checked;
    }
  }
  EXPECT_GT(checked, 6000);
}

TEST(SamplerGolden, RejectsWhatTorchRejects) {
  int checked = 0;
  for (const Line& line : Golden()) {
    if (line.kind != "sampler_error") continue;
    const SamplerCase c = ParseSamplerCase(line);
    std::string message;
    try {
      RunSampler(c);
    } catch (const std::invalid_argument& e) {
      message = e.what();
    }
    ASSERT_FALSE(message.empty()) << "accepted line " << line.line_number;
    // payload: "ValueError: <torch's message>" or "RuntimeError: <message>".
    const std::string torch_message = line.payload.substr(line.payload.find(": ") + 2);
    EXPECT_EQ(message.substr(0, torch_message.size()), torch_message)
        << "line " << line.line_number;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}

}  // namespace
}  // namespace ddp::data

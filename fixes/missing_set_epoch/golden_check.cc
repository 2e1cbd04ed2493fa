#include "fixes/missing_set_epoch/golden_check.h"

#include <map>
#include <memory>
#include <tuple>

#include "core/data/data_loader.h"
#include "core/data/synthetic.h"
#include "core/data/testing/golden_reader.h"
#include "repro/missing_set_epoch/scenario.h"

namespace ddp::missing_set_epoch {
namespace {

class FixedSampler final : public data::Sampler {
 public:
  explicit FixedSampler(std::vector<int64_t> v) : v_(std::move(v)) {}
  int64_t Size() const override { return static_cast<int64_t>(v_.size()); }
  std::vector<int64_t> Indices() const override { return v_; }

 private:
  std::vector<int64_t> v_;
};

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : " ") + std::to_string(x);
  return s;
}

}  // namespace

GoldenComparison CompareWithTorchLoader(const std::string& path) {
  GoldenComparison out;
  // (n, w, seed, b, set_epoch, rank, epoch) -> our batches, computed once.
  std::map<std::tuple<int64_t, int, int64_t, int64_t, int, int, int>,
           std::vector<std::vector<int64_t>>>
      ours;
  std::map<std::tuple<int64_t, int, int64_t, int64_t, int, int, int>, std::size_t> torch_steps;
  for (const data::golden::Line& line : data::golden::ReadLines(path)) {
    if (line.kind != "batch" || line.fields.size() != 8) {
      throw std::runtime_error(path + ":" + std::to_string(line.line_number) + ": bad line");
    }
    const int64_t n = std::stoll(line.fields[0]);
    const int w = std::stoi(line.fields[1]);
    const int64_t seed = std::stoll(line.fields[2]);
    const int64_t b = std::stoll(line.fields[3]);
    const int set_epoch = std::stoi(line.fields[4]);
    const int rank = std::stoi(line.fields[5]);
    const int epoch = std::stoi(line.fields[6]);
    const std::size_t step = std::stoul(line.fields[7]);
    const auto key = std::make_tuple(n, w, seed, b, set_epoch, rank, epoch);
    auto it = ours.find(key);
    if (it == ours.end()) {
      const OrderConfig c{.n = n, .world_size = w, .seed = seed, .epochs = epoch + 1};
      const Mode mode = set_epoch ? Mode::kSetEpoch : Mode::kNoSetEpoch;
      // The dataset only sizes the loader; its contents play no part.
      auto ds = std::make_shared<const data::GaussianBinary>(data::GaussianBinaryConfig{.size = n});
      data::DataLoaderOptions lo;
      lo.batch_size = b;
      lo.sampler = std::make_shared<FixedSampler>(RankIndices(mode, c, rank, epoch));
      data::DataLoader loader(ds, lo);
      it = ours.emplace(key, loader.EpochBatches()).first;
    }
    const std::vector<int64_t> expected = data::golden::ParseIndexList(line.payload);
    const std::vector<int64_t> got = step < it->second.size() ? it->second[step]
                                                               : std::vector<int64_t>{};
    ++torch_steps[key];
    ++out.batches_checked;
    (set_epoch ? out.set_epoch_batches : out.no_set_epoch_batches)++;
    if (got != expected && out.first_mismatch.empty()) {
      out.first_mismatch = "line " + std::to_string(line.line_number) + ": torch [" +
                           line.payload + "], ours [" + Join(got) + "]";
    }
  }
  for (const auto& [key, steps] : torch_steps) {
    if (ours.at(key).size() != steps && out.first_mismatch.empty()) {
      out.first_mismatch = "torch iterated " + std::to_string(steps) + " batches, ours " +
                           std::to_string(ours.at(key).size()) + " (rank " +
                           std::to_string(std::get<5>(key)) + ", epoch " +
                           std::to_string(std::get<6>(key)) + ")";
    }
  }
  return out;
}

}  // namespace ddp::missing_set_epoch

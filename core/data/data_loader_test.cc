#include "core/data/data_loader.h"

#include <memory>

#include "core/data/synthetic.h"
#include "gtest/gtest.h"

namespace ddp::data {
namespace {

std::shared_ptr<const Dataset> Binary(int64_t n) {
  return std::make_shared<GaussianBinary>(GaussianBinaryConfig{.size = n, .seed = 1});
}

TEST(DataLoader, ShuffleWithSamplerIsPytorchsError) {
  DataLoaderOptions options;
  options.shuffle = true;
  options.sampler = std::make_shared<DistributedSampler>(
      10, DistributedSamplerOptions{.num_replicas = 2, .rank = 0});
  try {
    DataLoader loader(Binary(10), options);
    FAIL() << "accepted shuffle=true with a sampler";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "sampler option is mutually exclusive with shuffle");
  }
  DataLoaderOptions bad_batch;
  bad_batch.batch_size = 0;
  EXPECT_THROW(DataLoader(Binary(10), bad_batch), std::invalid_argument);
}

TEST(DataLoader, BatchesFollowTheSampler) {
  auto sampler = std::make_shared<DistributedSampler>(
      1003, DistributedSamplerOptions{.num_replicas = 2, .rank = 1});
  DataLoaderOptions options;
  options.batch_size = 64;
  options.sampler = sampler;
  DataLoader loader(Binary(1003), options);
  EXPECT_EQ(loader.NumBatches(), 8);  // ceil(502 / 64)
  const auto batches = loader.EpochBatches();
  ASSERT_EQ(batches.size(), 8u);
  EXPECT_EQ(batches.back().size(), 502u - 7 * 64);
  std::vector<int64_t> flat;
  for (const auto& b : batches) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_EQ(flat, sampler->Indices());
  // set_epoch on the shared sampler reaches the loader.
  loader.SetEpoch(1);
  EXPECT_NE(loader.EpochBatches(), batches);
  EXPECT_EQ(sampler->epoch(), 1);
}

TEST(DataLoader, DropLastDropsTheShortBatch) {
  DataLoaderOptions options;
  options.batch_size = 4;
  options.drop_last = true;
  DataLoader loader(Binary(10), options);
  EXPECT_EQ(loader.NumBatches(), 2);
  EXPECT_EQ(loader.EpochBatches(),
            (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(DataLoader, ShuffleWithoutSamplerUsesSeededRandperm) {
  DataLoaderOptions options;
  options.batch_size = 3;
  options.shuffle = true;
  options.seed = 4;
  DataLoader a(Binary(10), options), b(Binary(10), options);
  EXPECT_EQ(a.EpochBatches(), b.EpochBatches());
  EXPECT_NE(a.EpochBatches()[0], (std::vector<int64_t>{0, 1, 2}));
}

TEST(DataLoader, FiltersDropSamplesAndBatches) {
  DataLoaderOptions options;
  options.batch_size = 3;
  options.keep_sample = [](int64_t i) { return i < 3 || i >= 6; };  // empties batch {3,4,5}
  DataLoader skip(Binary(10), options);
  EXPECT_EQ(skip.EpochBatches(),
            (std::vector<std::vector<int64_t>>{{0, 1, 2}, {6, 7, 8}, {9}}));
  options.yield_empty_batches = true;
  DataLoader yield(Binary(10), options);
  EXPECT_EQ(yield.EpochBatches().size(), 4u);
  EXPECT_TRUE(yield.EpochBatches()[1].empty());
  // A whole-batch filter, e.g. "BatchNorm needs at least 2 samples".
  options.keep_batch = [](const std::vector<int64_t>& b) { return b.size() >= 2; };
  DataLoader min2(Binary(10), options);
  EXPECT_EQ(min2.EpochBatches(), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {6, 7, 8}}));
  EXPECT_EQ(min2.NumBatches(), 4);  // len(loader) counts batches before filtering
}

TEST(DataLoader, LoadMaterialisesRows) {
  auto images = std::make_shared<TinyImages>(TinyImagesConfig{.size = 20});
  DataLoaderOptions options;
  options.batch_size = 5;
  DataLoader loader(images, options);
  const Batch batch = loader.Load(loader.EpochBatches()[1]);
  ASSERT_EQ(batch.x.rows(), 5);
  ASSERT_EQ(batch.x.cols(), 192);
  EXPECT_EQ(batch.indices, (std::vector<int64_t>{5, 6, 7, 8, 9}));
  const Sample s7 = images->Get(7);
  EXPECT_EQ(Eigen::VectorXd(batch.x.row(2).transpose()), s7.x);
  EXPECT_EQ(batch.labels[2], s7.label);
}

}  // namespace
}  // namespace ddp::data

// Bit-exact re-implementations of the PyTorch 1.13 CPU random pieces that
// torch.utils.data.DistributedSampler depends on.
#pragma once

#include <cstdint>
#include <vector>

namespace ddp::data {

// The 32-bit state seed that torch.Generator().manual_seed(seed) ends up
// using. torch accepts any Python int in [-2^63, 2^64) (negative values wrap
// modulo 2^64; anything else raises "Overflow when unpacking long"), stores
// it as a uint64 and seeds its mt19937 with the low 32 bits only. `seed` is
// passed as (value, offset) so that `seed + epoch` (what the sampler passes)
// is checked for that range without overflowing int64 here.
// Throws std::invalid_argument with torch's message when out of range.
uint32_t TorchGeneratorSeed(int64_t seed, int64_t offset = 0);

// Largest n accepted by TorchRandperm. torch 1.13 was checked against this
// formula up to n = 500,000,000 (see README.md); at n >= 2^32 a 32-bit draw
// no longer covers the range and newer PyTorch releases use 64-bit draws, so
// rather than guess we refuse.
inline constexpr int64_t kMaxRandpermN = (int64_t{1} << 32) - 1;

// torch.randperm(n, generator=g) on CPU with g.manual_seed(seed + offset):
// r = [0..n); for i in 0..n-2: z = mt19937() % (n - i); swap(r[i], r[i + z]).
// Throws std::invalid_argument for n < 0, n > kMaxRandpermN, or a bad seed.
std::vector<int64_t> TorchRandperm(int64_t n, int64_t seed, int64_t offset = 0);

}  // namespace ddp::data

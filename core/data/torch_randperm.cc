#include "core/data/torch_randperm.h"

#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddp::data {

uint32_t TorchGeneratorSeed(int64_t seed, int64_t offset) {
  const __int128 sum = static_cast<__int128>(seed) + offset;
  const __int128 lo = -(static_cast<__int128>(1) << 63);
  const __int128 hi = static_cast<__int128>(1) << 64;
  if (sum < lo || sum >= hi) {
    // torch: RuntimeError "Overflow when unpacking long".
    throw std::invalid_argument("Overflow when unpacking long (seed + epoch = " +
                                std::to_string(seed) + " + " +
                                std::to_string(offset) +
                                " is outside [-2^63, 2^64))");
  }
  // Two's-complement wrap to uint64, then the low 32 bits (at::mt19937 keeps
  // only `seed & 0xffffffff` as its first state word).
  const auto as_u64 = static_cast<uint64_t>(static_cast<unsigned __int128>(sum));
  return static_cast<uint32_t>(as_u64 & 0xffffffffu);
}

std::vector<int64_t> TorchRandperm(int64_t n, int64_t seed, int64_t offset) {
  if (n < 0) {
    throw std::invalid_argument("randperm: n must be non-negative, got " +
                                std::to_string(n));
  }
  if (n > kMaxRandpermN) {
    throw std::invalid_argument(
        "randperm: n = " + std::to_string(n) +
        " exceeds 2^32-1, where torch's 32-bit-draw formula is unverified");
  }
  // std::mt19937's output sequence is fixed by the C++ standard and its
  // seeding matches at::mt19937's init_with_uint32.
  std::mt19937 engine(TorchGeneratorSeed(seed, offset));
  std::vector<int64_t> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), int64_t{0});
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t z = static_cast<int64_t>(engine()) % (n - i);
    std::swap(r[i], r[i + z]);
  }
  return r;
}

}  // namespace ddp::data

// Seeded random numbers whose values do not depend on the C++ library.
//
// std::mt19937_64's output sequence is fixed by the standard, but
// std::uniform_real_distribution and std::normal_distribution are not (libstdc++
// and libc++ give different values). So the transforms are ours:
//  * Uniform01 keeps the top 53 bits of one draw and scales by 2^-53: integer
//    ops and one exact multiply, hence bit-identical on every IEEE platform.
//    Uniform(lo, hi) adds one multiply and one add (correctly rounded IEEE ops;
//    with -std=c++20 GCC does not contract them into an FMA).
//  * Normal uses Box-Muller. std::log / std::cos are not required to be
//    correctly rounded, so a different libm may change the last bit. Model
//    initialisation therefore uses only Uniform (PyTorch's default bound
//    1/sqrt(fan_in) for Linear and Conv2d), which is exact everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace ddp::nn {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  uint64_t NextU64() { return engine_(); }

  // Uniform on [0, 1) with 53 random bits.
  double Uniform01() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform01(); }

  // Standard normal (scaled) from two draws; one value per call, no caching, so
  // the stream position after k calls is always 2k draws.
  double Normal(double mean = 0.0, double stddev = 1.0) {
    const double u1 = 1.0 - Uniform01();  // (0, 1]: log(u1) is finite
    const double u2 = Uniform01();
    const double r = std::sqrt(-2.0 * std::log(u1));
    return mean + stddev * r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace ddp::nn

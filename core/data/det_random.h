// Platform-independent random numbers for the synthetic datasets.
//
// std::normal_distribution (and the other std distributions) are
// implementation-defined, so two standard libraries give different data from
// the same seed. Here only the engine comes from the standard
// (std::mt19937_64, whose output sequence the standard fixes) and every
// transform is written out with IEEE-754 basic operations (+ - * / sqrt),
// which are correctly rounded everywhere. The log used by the normal
// transform is our own for the same reason (libm's log may differ in the
// last bit between platforms). The library is compiled with
// -ffp-contract=off so that no compiler fuses a*b+c into an FMA.
#pragma once

#include <cstdint>
#include <random>

namespace ddp::data {

// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
uint64_t SplitMix64(uint64_t x);

// Seed for the stream of sample `index` of a dataset with `seed`; every
// (seed, index) pair gets its own well-mixed 64-bit engine seed.
uint64_t StreamSeed(uint64_t seed, uint64_t index);

// Natural log for x > 0 from basic operations only (argument reduction with
// frexp, then the atanh series); within a few ulp of the true value.
// Returns -inf for 0 and NaN for negative or NaN input.
double PortableLog(double x);

class DetRng {
 public:
  explicit DetRng(uint64_t seed) : engine_(seed) {}

  uint64_t NextU64() { return engine_(); }
  // Uniform on [0, 1) with 53 random bits.
  double Uniform();
  // Standard normal, Marsaglia's polar method (one value per accepted pair).
  double Normal();
  // Uniform integer in [0, k) for k >= 1, by rejection (no modulo bias).
  uint64_t Below(uint64_t k);

 private:
  std::mt19937_64 engine_;
};

}  // namespace ddp::data

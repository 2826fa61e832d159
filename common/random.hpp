// Seeded random inputs. Tests draw a fresh seed per run (so every run checks new inputs)
// and print it on failure; FA2_SEED=<n> replays a run exactly.
#pragma once

#include <cstdint>
#include <random>

#include "common/tensor.hpp"

namespace fa2 {

// FA2_SEED when it is set, otherwise a new seed from std::random_device.
std::uint64_t fresh_seed();

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : seed_(seed), engine_(seed) {}
  std::uint64_t seed() const { return seed_; }
  double normal(double mean = 0.0, double stddev = 1.0) {
    return std::normal_distribution<double>(mean, stddev)(engine_);
  }
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(engine_); }
  std::mt19937_64& engine() { return engine_; }

 private:
  std::uint64_t seed_;
  std::mt19937_64 engine_;
};

// Fills the elements the view can see (not the gaps between them) with N(mean, stddev).
template <class T, int Rank>
void fill_normal(TensorView<T, Rank> t, Rng& rng, double mean = 0.0, double stddev = 1.0) {
  for_each_index<Rank>(t.shape(), [&](const Extents<Rank>& i) { t.at(i) = convert<T>(rng.normal(mean, stddev)); });
}

template <class T, int Rank>
Tensor<T, Rank> random_normal(const Extents<Rank>& shape, Rng& rng, double mean = 0.0, double stddev = 1.0) {
  Tensor<T, Rank> t(shape);
  fill_normal<T, Rank>(t.view(), rng, mean, stddev);
  return t;
}

}  // namespace fa2

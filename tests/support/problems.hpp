#pragma once

// Random datasets for actor tests: seeded, so every run and every process sees the same data.

#include "model/dataset.hpp"

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

namespace shardopt::test {

/// A random softmax problem of n rows, d features and `classes` labels; sparse when asked (about a
/// third of the entries non-zero).
inline std::shared_ptr<const model::dataset> random_problem(std::uint32_t seed, std::int64_t n,
                                                           std::int64_t d, std::int64_t classes,
                                                           bool sparse = false) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> label(0, static_cast<int>(classes) - 1);
  model::dense_features x(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      x(i, j) = (!sparse || rng() % 3 == 0) ? normal(rng) : 0.0f;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i)
    data->y[i] = label(rng);
  if (sparse)
    data->x = model::sparse_features(x.sparseView());
  else
    data->x = std::move(x);
  return data;
}

/// `n` rows of 8 normal values among the first `used` of `d` features (a feature drawn twice in
/// a row is added up), labels +-1.
inline std::shared_ptr<model::dataset> sparse_rows(std::int64_t n, std::int64_t d, std::int64_t used,
                                                  std::uint32_t seed = 17) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal;
  std::vector<Eigen::Triplet<float>> entries;
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 8; ++k)
      entries.emplace_back(static_cast<int>(i), static_cast<int>(rng() % used), normal(rng));
    data->y[i] = rng() % 2 == 0 ? 1.0 : -1.0;
  }
  model::sparse_features x(n, d);
  x.setFromTriplets(entries.begin(), entries.end());
  x.makeCompressed();
  data->x = std::move(x);
  return data;
}

} // namespace shardopt::test

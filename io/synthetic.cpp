#include "io/synthetic.hpp"

#include "io/atomic_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <unordered_set>
#include <vector>

namespace shardopt::io {

namespace {

/// Uniform in [0, 1) from 53 bits of the generator.
double uniform(std::mt19937_64& bits) {
  return static_cast<double>(bits() >> 11) * 0x1.0p-53;
}

/// Standard normal by Box-Muller (one of the pair), from two uniforms.
double normal(std::mt19937_64& bits) {
  const double u = 1.0 - uniform(bits);  // (0, 1]: log is finite
  const double v = uniform(bits);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

/// An index uniform in [0, n) without modulo bias (draws past the last whole multiple of n are
/// redrawn).
std::int64_t below(std::mt19937_64& bits, std::uint64_t n) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n + 1) % n;
  for (;;)
    if (const auto x = bits(); x <= limit)
      return static_cast<std::int64_t>(x % n);
}

} // namespace

std::string check_synthetic(const synthetic_spec& spec) {
  using model::model_kind;
  if (spec.kind != model_kind::logistic && spec.kind != model_kind::softmax && spec.kind != model_kind::linear)
    return "--model: generate writes linear, logistic or softmax data";
  if (spec.rows < 1 || spec.rows > (std::int64_t{1} << 40))
    return "--rows must be between 1 and 2^40";
  if (spec.features < 1 || spec.features > (std::int64_t{1} << 31) - 1)
    return "--features must be between 1 and 2^31 - 1";
  if (spec.nonzeros < 1 || spec.nonzeros > spec.features || spec.nonzeros > 1'000'000)
    return "--nonzeros must be between 1 and min(--features, 10^6)";
  if (spec.kind == model_kind::softmax && (spec.classes < 2 || spec.classes > 10'000))
    return "--classes must be between 2 and 10000 for softmax data";
  if (static_cast<double>(spec.features) * static_cast<double>(spec.kind == model_kind::softmax ? spec.classes : 1)
      > 1e9)
    return "--features x --classes must be at most 10^9 (the planted weights are held in memory)";
  if (!(spec.signal > 0) || !std::isfinite(spec.signal) || !(spec.noise >= 0) || !std::isfinite(spec.noise))
    return "--signal must be positive and --noise non-negative, both finite";
  return {};
}

result<void> write_synthetic(const synthetic_spec& spec, const std::string& path) {
  if (auto why = check_synthetic(spec); !why.empty())
    return fail_invalid(why);
  const std::int64_t outputs = spec.kind == model::model_kind::softmax ? spec.classes : 1;
  std::mt19937_64 bits{spec.seed};
  // The planted weights, feature-major: w[j * outputs + k].
  std::vector<double> w(static_cast<std::size_t>(spec.features * outputs));
  for (auto& value : w)
    value = spec.signal * normal(bits);
  const double value_scale = 1.0 / std::sqrt(static_cast<double>(spec.nonzeros));
  return stream_file_atomically(path, [&](std::ostream& out) {
    std::vector<std::int64_t> index;
    std::unordered_set<std::int64_t> chosen;
    std::vector<double> value(static_cast<std::size_t>(spec.nonzeros));
    std::vector<double> z(static_cast<std::size_t>(outputs));
    char buffer[64];
    for (std::int64_t i = 0; i < spec.rows && out; ++i) {
      // Distinct sorted indices, a uniform subset by Floyd's algorithm: exactly `nonzeros` draws.
      index.clear();
      chosen.clear();
      for (std::int64_t j = spec.features - spec.nonzeros; j < spec.features; ++j) {
        const auto t = below(bits, static_cast<std::uint64_t>(j + 1));
        index.push_back(chosen.insert(t).second ? t : j);
        if (index.back() == j)
          chosen.insert(j);
      }
      std::sort(index.begin(), index.end());
      std::fill(z.begin(), z.end(), 0.0);
      for (std::size_t t = 0; t < index.size(); ++t) {
        // Rounded to float first: the file holds what a reader stores, and z is computed from it.
        value[t] = static_cast<double>(static_cast<float>(value_scale * normal(bits)));
        for (std::int64_t k = 0; k < outputs; ++k)
          z[static_cast<std::size_t>(k)] += value[t] * w[static_cast<std::size_t>(index[t] * outputs + k)];
      }
      switch (spec.kind) {
        case model::model_kind::logistic:
          out << (uniform(bits) < 1.0 / (1.0 + std::exp(-z[0])) ? "+1" : "-1");
          break;
        case model::model_kind::softmax: {
          const double top = *std::max_element(z.begin(), z.end());
          double total = 0;
          for (auto& score : z)
            total += (score = std::exp(score - top));
          double u = uniform(bits) * total;
          std::int64_t label = outputs - 1;
          for (std::int64_t k = 0; k < outputs; ++k)
            if ((u -= z[static_cast<std::size_t>(k)]) < 0) {
              label = k;
              break;
            }
          out << label;
          break;
        }
        default:
          std::snprintf(buffer, sizeof(buffer), "%.17g", z[0] + spec.noise * normal(bits));
          out << buffer;
      }
      for (std::size_t t = 0; t < index.size(); ++t) {
        std::snprintf(buffer, sizeof(buffer), " %lld:%.9g", static_cast<long long>(index[t] + 1), value[t]);
        out << buffer;
      }
      out << '\n';
    }
  });
}

} // namespace shardopt::io

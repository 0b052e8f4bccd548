#include "actors/driver/placement.hpp"

#include <algorithm>
#include <numeric>

namespace shardopt::actors {

std::vector<std::size_t> place_shards(const std::vector<std::uint32_t>& weights,
                                      std::size_t shards) {
  const std::size_t n = weights.size();
  if (n == 0)
    return {};
  std::vector<std::uint64_t> w(weights.begin(), weights.end());
  std::uint64_t total = std::accumulate(w.begin(), w.end(), std::uint64_t{0});
  if (total == 0) {
    std::fill(w.begin(), w.end(), 1);
    total = n;
  }
  // Whole quotas first, then the remaining shards to the largest fractional parts.
  std::vector<std::size_t> count(n);
  std::vector<std::uint64_t> remainder(n);
  std::size_t given = 0;
  for (std::size_t j = 0; j < n; ++j) {
    count[j] = static_cast<std::size_t>(shards * w[j] / total);
    remainder[j] = shards * w[j] % total;
    given += count[j];
  }
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
  for (std::size_t k = 0; given < shards; ++k, ++given)
    ++count[order[k % n]];
  std::vector<std::size_t> plan;
  plan.reserve(shards);
  for (std::size_t j = 0; j < n; ++j)
    plan.insert(plan.end(), count[j], j);
  return plan;
}

} // namespace shardopt::actors

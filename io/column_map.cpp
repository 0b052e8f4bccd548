#include "io/column_map.hpp"

#include "base/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>

namespace shardopt::io {

namespace {

/// How many non-zeros ahead a scattered column's line is asked for (each access is a cache miss
/// on hashed features).
constexpr std::int64_t ahead = 32;

/// Runs f(begin, end) over pieces of [0, n) on every core this process may use.
void over_pieces(std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& f) {
  const auto threads = usable_cpus();
  const std::int64_t piece = std::max<std::int64_t>(n / (4 * static_cast<std::int64_t>(threads)) + 1, 1 << 16);
  const auto pieces = static_cast<std::size_t>((n + piece - 1) / piece);
  run_parallel(pieces, threads, [&](std::size_t i) {
    const auto begin = static_cast<std::int64_t>(i) * piece;
    f(begin, std::min(n, begin + piece));
  });
}

} // namespace

std::optional<column_map> used_columns(const model::dataset& data, double fraction) {
  if (!data.is_sparse())
    return std::nullopt;
  const auto x = data.sparse();
  // Marked on every core (relaxed stores of the same 1: any order gives the same marks).
  const std::unique_ptr<std::atomic<std::uint8_t>[]> seen{new std::atomic<std::uint8_t>[static_cast<std::size_t>(x.cols())]()};
  const auto* index = x.innerIndexPtr();
  over_pieces(x.nonZeros(), [&](std::int64_t begin, std::int64_t end) {
    for (auto p = begin; p < end; ++p) {
      if (p + ahead < end)
        __builtin_prefetch(&seen[static_cast<std::size_t>(index[p + ahead])], 1);
      seen[static_cast<std::size_t>(index[p])].store(1, std::memory_order_relaxed);
    }
  });
  column_map map;
  map.features = x.cols();
  for (std::int64_t j = 0; j < x.cols(); ++j)
    if (seen[static_cast<std::size_t>(j)].load(std::memory_order_relaxed) != 0)
      map.used.push_back(static_cast<std::int32_t>(j));
  if (static_cast<double>(map.used.size()) > fraction * static_cast<double>(map.features))
    return std::nullopt;
  return map;
}

std::optional<column_map> used_columns(const Eigen::VectorXd& stored, bool sparse, double fraction) {
  if (!sparse)
    return std::nullopt;
  column_map map;
  map.features = stored.size();
  for (Eigen::Index j = 0; j < stored.size(); ++j)
    if (stored[j] != 0)
      map.used.push_back(static_cast<std::int32_t>(j));
  if (static_cast<double>(map.used.size()) > fraction * static_cast<double>(map.features))
    return std::nullopt;
  return map;
}

std::optional<std::int64_t> first_unused_column(const model::dataset& data, const column_map& map) {
  if (!data.is_sparse())
    return data.cols() == 0 ? std::nullopt : std::optional<std::int64_t>{0};
  std::vector<std::uint8_t> kept(static_cast<std::size_t>(map.features), 0);
  for (const auto j : map.used)
    kept[static_cast<std::size_t>(j)] = 1;
  const auto x = data.sparse();
  const auto* index = x.innerIndexPtr();
  const auto* starts = x.outerIndexPtr();
  for (auto p = static_cast<std::int64_t>(starts[0]); p < starts[x.rows()]; ++p)
    if (index[p] < 0 || index[p] >= map.features || !kept[static_cast<std::size_t>(index[p])])
      return std::int64_t{index[p]};
  return std::nullopt;
}

model::dataset compact_columns(model::dataset data, const column_map& map) {
  std::vector<std::int32_t> place(static_cast<std::size_t>(map.features), -1);
  for (std::size_t k = 0; k < map.used.size(); ++k)
    place[static_cast<std::size_t>(map.used[k])] = static_cast<std::int32_t>(k);
  const auto columns = static_cast<std::int64_t>(map.used.size());
  if (auto* owned = std::get_if<model::sparse_features>(&data.x)) {
    // Eigen's own storage: renumbered in place (a column map keeps every row's order).
    owned->makeCompressed();
    auto* index = owned->innerIndexPtr();
    over_pieces(owned->nonZeros(), [&](std::int64_t begin, std::int64_t end) {
      for (auto p = begin; p < end; ++p) {
        if (p + ahead < end)
          __builtin_prefetch(&place[static_cast<std::size_t>(index[p + ahead])]);
        index[p] = place[static_cast<std::size_t>(index[p])];
      }
    });
    // Narrower in place: every index is below `columns` now, so no entry is dropped.
    owned->conservativeResize(owned->rows(), columns);
    owned->makeCompressed();
    return data;
  }
  // Shared storage: new indices beside the shared starts and values, which stay alive with them.
  const auto view = data.sparse();
  struct holder {
    model::dataset source;
    std::vector<std::int32_t> indices;
  };
  auto kept = std::make_shared<holder>();
  kept->indices.resize(static_cast<std::size_t>(view.nonZeros()));
  const auto* index = view.innerIndexPtr();
  over_pieces(view.nonZeros(), [&](std::int64_t begin, std::int64_t end) {
    for (auto p = begin; p < end; ++p) {
      if (p + ahead < end)
        __builtin_prefetch(&place[static_cast<std::size_t>(index[p + ahead])]);
      kept->indices[static_cast<std::size_t>(p)] = place[static_cast<std::size_t>(index[p])];
    }
  });
  const auto& shared = std::get<model::shared_sparse>(data.x);
  model::shared_sparse narrowed{shared.starts, kept->indices.data(), shared.values, shared.rows, columns,
                                nullptr, false};
  model::dataset out;
  out.y = data.y;
  kept->source = std::move(data);
  narrowed.owner = kept;
  out.x = narrowed;
  return out;
}

Eigen::VectorXd expand_theta(const model::model_shape& full, const column_map& map, const Eigen::VectorXd& compact) {
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(full.dimension());
  const auto used = static_cast<std::int64_t>(map.used.size());
  for (std::int64_t k = 0; k < full.outputs; ++k)
    for (std::int64_t j = 0; j < used; ++j)
      theta[k * full.features + map.used[static_cast<std::size_t>(j)]] = compact[k * used + j];
  theta.tail(full.outputs) = compact.tail(full.outputs);
  return theta;
}

Eigen::VectorXd compact_theta(const model::model_shape& full, const column_map& map, const Eigen::VectorXd& theta) {
  const auto used = static_cast<std::int64_t>(map.used.size());
  Eigen::VectorXd compact(used * full.outputs + full.outputs);
  for (std::int64_t k = 0; k < full.outputs; ++k)
    for (std::int64_t j = 0; j < used; ++j)
      compact[k * used + j] = theta[k * full.features + map.used[static_cast<std::size_t>(j)]];
  compact.tail(full.outputs) = theta.tail(full.outputs);
  return compact;
}

} // namespace shardopt::io

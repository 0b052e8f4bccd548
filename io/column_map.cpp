#include "io/column_map.hpp"

#include <algorithm>
#include <memory>

namespace shardopt::io {

std::optional<column_map> used_columns(const model::dataset& data, double fraction) {
  if (!data.is_sparse())
    return std::nullopt;
  const auto x = data.sparse();
  std::vector<char> seen(static_cast<std::size_t>(x.cols()), 0);
  const auto* index = x.innerIndexPtr();
  for (std::int64_t p = 0; p < x.nonZeros(); ++p)
    seen[static_cast<std::size_t>(index[p])] = 1;
  column_map map;
  map.features = x.cols();
  for (std::int64_t j = 0; j < x.cols(); ++j)
    if (seen[static_cast<std::size_t>(j)])
      map.used.push_back(static_cast<std::int32_t>(j));
  if (static_cast<double>(map.used.size()) > fraction * static_cast<double>(map.features))
    return std::nullopt;
  return map;
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
    for (std::int64_t p = 0; p < owned->nonZeros(); ++p)
      index[p] = place[static_cast<std::size_t>(index[p])];
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
  for (std::int64_t p = 0; p < view.nonZeros(); ++p)
    kept->indices[static_cast<std::size_t>(p)] = place[static_cast<std::size_t>(view.innerIndexPtr()[p])];
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

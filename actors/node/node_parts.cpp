#include "actors/node/node_parts.hpp"

#include "io/column_map.hpp"
#include "io/feature_moments.hpp"

#include <algorithm>
#include <functional>
#include <string>

namespace shardopt::actors {

caf::expected<io::part_summary> scan_part(const io::part_request& message, const node_limits& limits) {
  auto request = check_part(message, limits);
  if (!request)
    return refused(redact(request.error().message()));
  auto part = io::read_part(*request);
  if (!part)
    return make_error(errc::shard_failed, redact(part.error().message()));
  // Summaries hold per-feature statistics: a sparse file with one index near 2^31 would make a
  // few bytes cost gigabytes. A model of more features would be refused anyway.
  if (part->data.cols() > limits.dimension)
    return refused("part " + std::to_string(request->part + 1) + " has " + std::to_string(part->data.cols())
                   + " features, more than this node's limit of " + std::to_string(limits.dimension)
                   + " parameters");
  return io::summarize(*part);
}

caf::expected<io::feature_moments> part_moments(const moments_request& message, const node_limits& limits) {
  auto request = check_part(message.request, limits);
  if (!request)
    return refused(redact(request.error().message()));
  if (auto ok = check_grid(message.grid, limits); !ok)
    return refused(ok.error().message());
  auto part = io::read_part(*request);
  if (!part)
    return make_error(errc::shard_failed, redact(part.error().message()));
  auto moments = io::moments_of(part->data, message.grid, part->source);
  if (!moments)
    return make_error(errc::shard_failed, redact(moments.error().message()));
  return std::move(*moments);
}

caf::expected<io::part_request> checked_part(const part_shard_spec& spec, const node_limits& limits) {
  const auto& shape = spec.shape;
  const bool mapped = spec.full_features > 0;
  const auto d = static_cast<Eigen::Index>(mapped ? spec.full_features : shape.features);
  if (mapped || !spec.used.empty()) {  // a map of used columns: a linear model, as many columns as features
    const auto& used = spec.used;
    if (!mapped || used.empty() || shape.is_network() || static_cast<std::int64_t>(used.size()) != shape.features
        || spec.full_features > limits.dimension || used.front() < 0 || used.back() >= spec.full_features
        || std::adjacent_find(used.begin(), used.end(), std::greater_equal<>{}) != used.end())
      return refused("invalid shard request: a map of " + std::to_string(used.size())
                     + " used columns that are not increasing columns of at most " + std::to_string(limits.dimension)
                     + " for a linear model of as many features");
  }
  if (spec.labels.kind != shape.kind || spec.labels.outputs() != shape.outputs
      || (spec.scaling.mean.size() != 0 && spec.scaling.mean.size() != d)
      || (spec.scaling.inv_std.size() != 0 && spec.scaling.inv_std.size() != d))
    return make_error(errc::dimension_mismatch, "invalid shard request: labels or scaling do not fit the model");
  auto request = check_part(spec.request, limits);
  if (!request)
    return refused(redact(request.error().message()));
  request->options.features = d;  // LIBSVM: an index beyond the model is an error
  return std::move(*request);
}

caf::expected<std::shared_ptr<const model::dataset>> read_shard_part(const io::part_request& request,
                                                                     const part_shard_spec& spec) {
  auto part = io::read_part(request);
  if (!part)
    return make_error(errc::shard_failed, redact(part.error().message()));
  const auto features = spec.full_features > 0 ? spec.full_features : spec.shape.features;
  for (auto step : {io::match_features(*part, features, "the driver's model"),
                    io::encode_labels(spec.labels, *part), io::apply_scaling(spec.scaling, *part)})
    if (!step)
      return make_error(errc::shard_failed, redact(step.error().message()));
  if (auto row = model::first_invalid_label(spec.shape, part->data.y))
    return make_error(errc::dimension_mismatch, redact(part->where(*row)) + ": label invalid for this model");
  if (spec.full_features == 0)
    return std::make_shared<const model::dataset>(std::move(part->data));
  const io::column_map map{spec.used, spec.full_features};
  if (auto outside = io::first_unused_column(part->data, map))
    return make_error(errc::dimension_mismatch, "part " + std::to_string(request.part + 1) + " has column "
                                                  + std::to_string(*outside) + ", which the driver's map of "
                                                  + std::to_string(map.used.size()) + " used columns leaves out");
  return std::make_shared<const model::dataset>(io::compact_columns(std::move(part->data), map));
}

} // namespace shardopt::actors

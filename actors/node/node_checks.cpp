#include "actors/node/node_checks.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <unistd.h>

namespace shardopt::actors {

namespace fs = std::filesystem;

std::string redact(const std::string& message) {
  static const std::regex quoted{"'[^']*'"};
  auto out = std::regex_replace(message, quoted, "'...'");
  if (out.size() > 300)
    out = out.substr(0, 297) + "...";
  return out;
}

std::int64_t half_of_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page / 2
                               : std::int64_t{1} << 32;
}

result<void> check_restriction(const model::model_shape& source, const model::model_shape& compact,
                               const std::vector<std::int64_t>& features, const node_limits& limits) {
  // No columns is a model of biases alone (OWL-QN's working set with every weight at 0).
  if (compact.features != 0)
    if (auto ok = check_shape(compact, limits); !ok)
      return ok;
  if (!model::has_hessian(source) || compact.kind != source.kind || compact.outputs != source.outputs
      || !compact.hidden.empty())
    return fail_invalid("a restriction of " + model::describe(source) + " to " + model::describe(compact)
                        + " (only a linear model, to the same kind and outputs)");
  if (static_cast<std::int64_t>(features.size()) != compact.features)
    return fail_invalid(std::to_string(features.size()) + " columns for a model of "
                        + std::to_string(compact.features) + " features");
  for (std::size_t k = 0; k < features.size(); ++k)
    if (features[k] < 0 || features[k] >= source.features || (k > 0 && features[k] <= features[k - 1]))
      return fail_invalid("column " + std::to_string(features[k]) + " at " + std::to_string(k)
                          + ": the columns must increase and stay below the source's "
                          + std::to_string(source.features) + " features");
  return {};
}

result<void> check_layout(std::int64_t first_block, std::int64_t block_rows) {
  if (first_block < 0 || first_block > (std::int64_t{1} << 40) || block_rows < 1 || block_rows > (std::int64_t{1} << 20))
    return fail_invalid("invalid block layout (first block " + std::to_string(first_block) + ", "
                        + std::to_string(block_rows) + " rows per block)");
  return {};
}

result<void> check_grid(const io::moment_grid& grid, const node_limits& limits) {
  if (static_cast<std::int64_t>(grid.shift.size()) > limits.dimension || !std::isfinite(grid.factor)
      || std::any_of(grid.shift.begin(), grid.shift.end(), [](auto s) { return s < -1100 || s > 1100; }))
    return fail_invalid("invalid moments request: a grid of " + std::to_string(grid.shift.size())
                        + " features, out of range or past this node's limit of "
                        + std::to_string(limits.dimension) + " parameters");
  return {};
}

result<void> check_shape(const model::model_shape& shape, const node_limits& limits) {
  if (static_cast<std::uint8_t>(shape.kind) > static_cast<std::uint8_t>(model::model_kind::svm))
    return fail_invalid("unknown model kind");
  if (auto ok = model::check_architecture(shape); !ok)
    return std::move(ok).with_context("bad network");
  if (shape.features <= 0 || shape.outputs <= 0)
    return fail_invalid("bad model shape");
  if (!model::checked_dimension(shape, limits.dimension))
    return fail_invalid("a model of shape " + model::describe(shape) + " exceeds this node's limit of " +
                std::to_string(limits.dimension) + " parameters");
  return {};
}

namespace {

/// Resolves a dataset spec from a peer inside the data root: "fashion-mnist" or a path (relative
/// paths are relative to the root). Symbolic links are followed before the check, and a dataset
/// directory's entries are checked one by one.
result<std::string> confine(const std::string& spec, const std::string& root) {
  if (root.empty())
    return fail_invalid("this node serves no node-local data (start it with --data-root DIR)");
  std::error_code ec;
  const fs::path wanted = spec == "fashion-mnist" ? fs::path{"/usr/share/datasets/fashion-mnist"}
                                                  : fs::path{spec};
  const auto resolved = fs::weakly_canonical(fs::path{root} / wanted, ec);
  if (ec)
    return fail_invalid(spec + ": cannot resolve the path");
  auto inside = [&](const fs::path& path) {
    const auto rel = path.lexically_relative(root);
    return !rel.empty() && *rel.begin() != ".." && !rel.is_absolute();
  };
  if (!inside(resolved) && resolved != fs::path{root})
    return fail_invalid(spec + ": outside this node's data root");
  if (fs::is_directory(resolved, ec))
    for (const auto& entry : fs::directory_iterator{resolved, ec}) {
      const auto target = fs::weakly_canonical(entry.path(), ec);
      if (ec || !inside(target))
        return fail_invalid(spec + ": an entry of the dataset directory leads outside this node's data root");
    }
  if (spec == "fashion-mnist")
    return std::string{"fashion-mnist"};
  return resolved.string();
}

} // namespace

result<io::part_request> check_part(io::part_request request, const node_limits& limits) {
  if (request.parts < 1 || request.parts > limits.parts || request.part < 0
      || request.part >= request.parts)
    return fail_invalid("part " + std::to_string(request.part) + " of " + std::to_string(request.parts)
                + " is not a valid part (at most " + std::to_string(limits.parts) + " parts)");
  if (request.options.features < 0 || request.options.features > limits.dimension
      || request.options.limit < 0 || request.skip < 0 || request.skip >= io::max_part_shift
      || request.extra < 0 || request.extra >= io::max_part_shift || request.options.label_column < -(1 << 24)
      || request.options.label_column > (1 << 24))
    return fail_invalid("invalid read options");
  auto hashing = request.options.hashing;
  if (hashing.bits == 0 && request.options.format == io::data_format::vw)
    hashing.bits = io::default_hash_bits;  // what the reader takes
  if (hashing.dimension() > limits.dimension)
    return fail_invalid("2^" + std::to_string(hashing.bits) + " hashed features are more than this node's "
                        "limit of " + std::to_string(limits.dimension));
  auto path = confine(request.spec, limits.data_root);
  if (!path)
    return path.error();
  request.spec = *path;
  return request;
}

result<void> check_block(const model::model_shape& shape, const model::dataset* data,
                         model::row_range rows) {
  if (!data)
    return fail_invalid("invalid shard request: no data");
  if (data->cols() != shape.features)
    return fail_invalid("shard data has " + std::to_string(data->cols())
                        + " features, the model expects " + std::to_string(shape.features));
  if (rows.begin < 0 || rows.end > data->rows() || rows.size() <= 0)
    return fail_invalid("shard data holds no rows");
  const Eigen::VectorXd labels = data->y.segment(rows.begin, rows.size());
  if (auto row = model::first_invalid_label(shape, labels))
    return fail_invalid("shard data row " + std::to_string(*row) + " has label "
                        + std::to_string(labels[*row]) + ", invalid for this model");
  return {};
}

} // namespace shardopt::actors

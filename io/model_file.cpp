#include "io/model_file.hpp"
#include "io/atomic_file.hpp"
#include "io/model_archive.hpp"

#include <boost/archive/archive_exception.hpp>
#include <boost/archive/text_iarchive.hpp>
#include <boost/archive/text_oarchive.hpp>
#include <boost/serialization/array_wrapper.hpp>
#include <boost/serialization/string.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <locale>
#include <system_error>
#include <vector>

namespace shardopt::io {

namespace {

// File layout, in a Boost text archive: magic, format version, shape (kind, features, outputs),
// theta, label encoding (kind, classes), scaling (factor, mean, inv_std), lambda, l1 (version 3),
// the feature hashing's description (version 4; empty for numeric input), end marker.
// Vectors are a size followed by their elements. theta is a tag first (version 3): 0 and the
// vector, or 1, when fewer than a fifth of its entries are non-zero (an L1 model), and its size,
// the non-zero entries' indices (increasing) and their values. The end marker makes a file cut
// anywhere fail to load instead of yielding a shorter last number.
const std::string model_magic = "shardopt-model";
const std::string model_end_marker = "end-of-model";
constexpr int model_format_version = 4;  // 4: the feature hashing; 3: theta sparse when mostly 0; 2: the network architecture
constexpr int model_oldest_version = 1;

/// Sanity bounds that keep a corrupt size from allocating gigabytes before the load fails.
constexpr std::int64_t max_features = std::int64_t{1} << 40;
constexpr std::int64_t max_outputs = std::int64_t{1} << 20;

/// theta as the layout above says: dense, or its non-zero entries when they are under a fifth.
void save_theta(boost::archive::text_oarchive& archive, const Eigen::VectorXd& theta) {
  const auto size = static_cast<std::int64_t>(theta.size());
  std::vector<std::int64_t> indices;
  for (std::int64_t i = 0; i < size && static_cast<std::int64_t>(indices.size()) * 5 < size; ++i)
    if (theta[i] != 0 || std::signbit(theta[i]))  // -0.0 keeps its sign
      indices.push_back(i);
  const bool sparse = static_cast<std::int64_t>(indices.size()) * 5 < size;
  archive << (sparse ? 1 : 0);
  if (!sparse) {
    detail::save_vector(archive, theta.data(), size);
    return;
  }
  std::vector<double> values(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k)
    values[k] = theta[indices[k]];
  archive << size;
  detail::save_vector(archive, indices.data(), static_cast<std::int64_t>(indices.size()));
  detail::save_vector(archive, values.data(), static_cast<std::int64_t>(values.size()));
}

/// A sparse theta as read: its entries, checked, and made into a vector of the dimension only once
/// the rest of the file has read back whole (a few bytes must not make gigabytes of zeros).
struct sparse_theta {
  bool sparse = false;
  std::vector<std::int64_t> indices;
  std::vector<double> values;
};

/// Reads theta of `dimension` entries, dense (files before version 3, or tag 0) into `theta`, or
/// sparse into `entries`.
result<void> load_theta(detail::archive_reader& archive, Eigen::VectorXd& theta, sparse_theta& entries,
                        std::int64_t dimension) {
  int tag = 0;
  if (archive.version() >= 3)
    archive >> tag;
  if (tag == 0)
    return archive.load_vector(theta, dimension);
  if (tag != 1)
    return fail_invalid("an unknown encoding " + std::to_string(tag));
  std::int64_t size = 0;
  archive >> size;
  if (size != dimension)
    return fail_invalid("a size of " + std::to_string(size) + ", the shape needs " + std::to_string(dimension));
  if (size > model::max_parameters)
    return fail_invalid("a size of " + std::to_string(size) + ", more than the " +
                        std::to_string(model::max_parameters) + " parameters a model may have");
  entries.sparse = true;
  auto& indices = entries.indices;
  if (auto loaded = archive.load_vector(indices, dimension); !loaded)
    return loaded;
  if (auto loaded = archive.load_vector(entries.values, dimension); !loaded)
    return loaded;
  return detail::check_sparse_entries(indices, entries.values, dimension);
}

} // namespace

namespace detail {

void write_model_fields(boost::archive::text_oarchive& archive, const saved_model& model) {
  const int kind = static_cast<int>(model.shape.kind);
  const int label_kind = static_cast<int>(model.labels.kind);
  archive << kind << model.shape.features << model.shape.outputs << static_cast<int>(model.shape.act)
          << static_cast<std::int64_t>(model.shape.hidden.size());
  for (const auto width : model.shape.hidden)
    archive << width;
  save_theta(archive, model.theta);
  archive << label_kind;
  save_vector(archive, model.labels.classes.data(),
              static_cast<std::int64_t>(model.labels.classes.size()));
  archive << model.scaling.factor;
  save_vector(archive, model.scaling.mean.data(), model.scaling.mean.size());
  save_vector(archive, model.scaling.inv_std.data(), model.scaling.inv_std.size());
  archive << model.lambda << model.l1 << describe(model.hashing) << model_end_marker;
}

} // namespace detail

namespace {

void write_archive(std::ostream& stream, const saved_model& model) {
  boost::archive::text_oarchive archive{stream};
  archive << model_magic << model_format_version;
  detail::write_model_fields(archive, model);
}

bool valid_kind(int kind) { return kind >= 0 && kind <= static_cast<int>(model::model_kind::svm); }

/// Checks that the parts of a model agree: theta (of `theta_size` entries) fits the shape, the
/// label encoding gives the shape's outputs, the scaling has one entry per feature (or none).
result<void> check_consistent(const saved_model& model, std::int64_t theta_size) {
  const auto& shape = model.shape;
  if (theta_size != shape.dimension())
    return fail_invalid("theta has " + std::to_string(theta_size) + " entries, but the shape needs " +
                std::to_string(shape.dimension()));
  if (model.labels.kind != shape.kind || model.labels.outputs() != shape.outputs)
    return fail_invalid("the label encoding (" + std::string{model::to_string(model.labels.kind)} + ", " +
                std::to_string(model.labels.outputs()) + " outputs) does not match the shape (" +
                std::string{model::to_string(shape.kind)} + ", " + std::to_string(shape.outputs) +
                " outputs)");
  if (!(model.l1 >= 0) || !std::isfinite(model.l1))
    return fail_invalid("the L1 weight " + std::to_string(model.l1) + " is not a finite non-negative number");
  const auto sized = [&](const Eigen::VectorXd& v) { return v.size() == 0 || v.size() == shape.features; };
  if (!sized(model.scaling.mean) || !sized(model.scaling.inv_std) ||
      !std::isfinite(model.scaling.factor))
    return fail_invalid("the feature scaling does not match the " + std::to_string(shape.features) +
                " features");
  return {};
}

} // namespace

namespace detail {

result<saved_model> read_model_fields(archive_reader& archive, const std::string& path) {
  saved_model model;
  int kind = 0;
  archive >> kind >> model.shape.features >> model.shape.outputs;
  if (!valid_kind(kind) || model.shape.features < 0 || model.shape.features > max_features ||
      model.shape.outputs < 1 || model.shape.outputs > max_outputs)
    return fail_invalid(path + ": corrupt model file: invalid shape");
  model.shape.kind = static_cast<model::model_kind>(kind);
  if (archive.version() >= 2) {
    int act = 0;
    std::int64_t layers = 0;
    archive >> act >> layers;
    if (act < 0 || act > static_cast<int>(model::activation::tanh) || layers < 0 ||
        layers > static_cast<std::int64_t>(model::max_hidden_layers))
      return fail_invalid(path + ": corrupt model file: invalid network architecture");
    model.shape.act = static_cast<model::activation>(act);
    model.shape.hidden.resize(static_cast<std::size_t>(layers));
    for (auto& width : model.shape.hidden)
      archive >> width;
    if (!model::check_architecture(model.shape))
      return fail_invalid(path + ": corrupt model file: invalid network architecture");
  }
  const auto dimension = model::checked_dimension(model.shape, max_features);
  if (!dimension)
    return fail_invalid(path + ": corrupt model file: invalid shape");
  const auto corrupt = [&](const failure& why, const std::string& field) {
    return why.with_context(path + ": truncated or corrupt model file: " + field);
  };
  sparse_theta entries;
  if (auto loaded = load_theta(archive, model.theta, entries, *dimension); !loaded)
    return corrupt(loaded.error(), "theta");
  int label_kind = 0;
  archive >> label_kind;
  if (!valid_kind(label_kind))
    return fail_invalid(path + ": corrupt model file: invalid label encoding");
  if (auto loaded = archive.load_vector(model.labels.classes, max_outputs); !loaded)
    return corrupt(loaded.error(), "label classes");
  model.labels.kind = static_cast<model::model_kind>(label_kind);
  archive >> model.scaling.factor;
  if (auto loaded = archive.load_vector(model.scaling.mean, model.shape.features); !loaded)
    return corrupt(loaded.error(), "scaling means");
  if (auto loaded = archive.load_vector(model.scaling.inv_std, model.shape.features); !loaded)
    return corrupt(loaded.error(), "scaling inverse deviations");
  std::string file_end;
  archive >> model.lambda;
  if (archive.version() >= 3)
    archive >> model.l1;
  if (archive.version() >= 4) {
    std::string hashing;
    if (auto loaded = archive.load_string(hashing); !loaded)
      return corrupt(loaded.error(), "feature hashing");
    auto parsed = parse_hashing(hashing);
    if (!parsed)
      return corrupt(parsed.error(), "feature hashing");
    model.hashing = std::move(*parsed);
    if (model.hashing.enabled() && model.hashing.dimension() != model.shape.features)
      return fail_invalid(path + ": corrupt model file: " + std::to_string(model.shape.features)
                          + " features, but its hashing makes " + std::to_string(model.hashing.dimension()));
  }
  if (auto loaded = archive.load_string(file_end); !loaded || file_end != model_end_marker)
    return fail_invalid(path + ": truncated or corrupt model file: no end marker");
  if (auto consistent = check_consistent(model, entries.sparse ? *dimension : model.theta.size()); !consistent)
    return consistent.error().with_context(path + ": corrupt model file");
  if (entries.sparse) {  // the whole file read back and found consistent: now its zeros
    model.theta = Eigen::VectorXd::Zero(*dimension);
    for (std::size_t k = 0; k < entries.indices.size(); ++k)
      model.theta[entries.indices[k]] = entries.values[k];
  }
  return model;
}

} // namespace detail

result<void> save_model(const std::string& path, const saved_model& model) {
  if (auto consistent = check_consistent(model, model.theta.size()); !consistent)
    return consistent.error().with_context(path + ": cannot save the model");
  return stream_file_atomically(path, [&](std::ostream& stream) { write_archive(stream, model); });
}

result<saved_model> load_model(const std::string& path) {
  return detail::read_archive_file<saved_model>(path, model_magic, model_format_version, "model file",
                                                [&](detail::archive_reader& archive) {
                                                  return detail::read_model_fields(archive, path);
                                                },
                                                model_oldest_version);
}

} // namespace shardopt::io

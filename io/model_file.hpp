#pragma once

#include "io/hashing.hpp"
#include "io/labels.hpp"
#include "io/scaling.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <Eigen/Core>

#include <string>

namespace shardopt::io {

/// A trained model as `shardopt train --save` writes it and `shardopt eval` reads it: everything needed
/// to predict on new raw data (shape, theta, label encoding, feature scaling).
struct saved_model {
  model::model_shape shape;
  Eigen::VectorXd theta;
  label_encoding labels;
  feature_scaling scaling;
  double lambda = 0;
  double l1 = 0;  ///< --l1 (format 3 on; 0 in older files)
  /// How raw input was hashed into the features (format 4 on; none in older files): `eval` and
  /// Python's predict on raw rows hash them alike.
  hashing_options hashing;
};

/// Writes the model with Boost.Serialization (portable text archive) through
/// `stream_file_atomically`: `path` holds the old model or the whole new one, never part of one,
/// even after a crash or a full disk. Errors name `path` and the cause (errno text).
result<void> save_model(const std::string& path, const saved_model& model);

/// Reads a model written by `save_model`. Errors name the file: missing, not a shardopt model,
/// truncated, or inconsistent (theta size not matching the shape).
result<saved_model> load_model(const std::string& path);

} // namespace shardopt::io

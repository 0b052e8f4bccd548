#pragma once

#include "io/readers.hpp"
#include "model/linear_model.hpp"

#include <vector>

namespace shardopt::io {

/// How raw label values map to what a model trains on (see `model::model_kind`).
/// - linear: labels used as they are; `classes` empty.
/// - logistic, and svm with exactly two distinct label values: `classes` = {smaller, larger},
///   encoded as -1 / +1; one output.
/// - softmax, and svm with more than two classes: labels must be the integers 0..K-1; `classes` =
///   {0, 1, ..., K-1}; K outputs.
struct label_encoding {
  model::model_kind kind = model::model_kind::linear;
  std::vector<double> classes;

  /// Number of model outputs: 1, or K for multiclass.
  std::int64_t outputs() const;
};

/// Derives the encoding from the training labels. `classes` > 0 fixes K for softmax/svm (labels must
/// then lie in 0..classes-1). Errors name the offending example: a non-integer or negative class
/// label, a third distinct value for logistic regression, a single class.
result<label_encoding> fit_labels(model::model_kind kind, const raw_dataset& train,
                                  std::int64_t classes = 0);

/// Encodes `data`'s labels in place. Errors name the example whose label the encoding does not know
/// ("label out of range").
result<void> encode_labels(const label_encoding& encoding, raw_dataset& data);

} // namespace shardopt::io

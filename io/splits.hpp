#pragma once

#include "io/labels.hpp"
#include "io/readers.hpp"
#include "io/scaling.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace shardopt::io {

/// Part `part` of `parts` of a training dataset, as a node reads it for a node-local shard.
struct part_request {
  std::string spec;  ///< as `--data`: a file, a MNIST-layout directory, or "fashion-mnist"
  read_options options;
  std::int64_t part = 0;
  std::int64_t parts = 1;
};

/// Reads one part of a dataset without holding the rest:
/// - CSV and LIBSVM by byte ranges aligned to line starts, like Hadoop's input splits: part p of P
///   covers bytes [size*p/P, size*(p+1)/P) and owns every line whose first byte lies there, so the
///   parts together hold every line exactly once, in order. Only part 0 can have a header.
///   gzip-compressed text cannot be split by bytes: it is decompressed and split the same way.
/// - IDX (MNIST layout) by record ranges of whole canonical blocks, as io::partition_blocks(n, P):
///   the rows of local shards.
/// The source names the part ("train.csv (part 2 of 4, bytes 1048576-2097152)") and line numbers
/// count from the part's first line. Errors as for read_dataset, plus a part with no examples.
result<raw_dataset> read_part(const part_request& request);

/// What the driver needs to know of one part to fit the label encoding and feature scaling of the
/// whole dataset without reading it: sizes, distinct labels, per-feature sums (of the raw values).
struct part_summary {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  bool sparse = false;
  bool pixels = false;
  std::vector<double> labels;  ///< distinct label values, sorted (at most 65,537 kept)
  Eigen::VectorXd sum;         ///< per feature: sum of values
  Eigen::VectorXd squares;     ///< per feature: sum of squared values
  Eigen::VectorXd low;         ///< per feature: smallest stored value (+inf: none stored)
  Eigen::VectorXd high;        ///< per feature: largest stored value (-inf: none stored)
  Eigen::VectorXd stored;      ///< per feature: number of stored values (rows, for dense data)
};

/// Summarises a part read by read_part.
part_summary summarize(const raw_dataset& part);

/// The encoding and scaling of the whole dataset, fitted from its parts' summaries.
struct fitted_parts {
  label_encoding labels;
  feature_scaling scaling;
  std::int64_t features = 0;
  std::int64_t rows = 0;
};

/// Fits the label encoding (as fit_labels) and scaling (as fit_scaling, statistics from sums) of the
/// union of the parts. Errors: parts that disagree on the feature count (dense data) or kind, and the
/// label errors of fit_labels; `source` names the dataset in messages.
result<fitted_parts> fit_parts(model::model_kind kind, std::int64_t classes,
                               const std::vector<part_summary>& parts, scale_mode mode,
                               bool standardize, const std::string& source);

} // namespace shardopt::io

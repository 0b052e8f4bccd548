#pragma once

#include "io/labels.hpp"
#include "io/readers.hpp"
#include "io/scaling.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::io {

/// Part `part` of `parts` of a training dataset, as a node reads it for a node-local shard.
struct part_request {
  std::string spec;  ///< as `--data`: a file, a MNIST-layout directory, or "fashion-mnist"
  read_options options;
  std::int64_t part = 0;
  std::int64_t parts = 1;
  /// Text parts only: the examples moved across the part's edges, so that a part's first example
  /// starts a canonical block (model/exact_sum.hpp) and the sums are the same bits for any part
  /// count. The part drops its first `skip` examples (they end the previous part's last block) and
  /// appends the first `extra` examples of the text after its bytes (they end its own last block).
  /// Each is below max_part_shift; a part with none is read as its bytes say.
  std::int64_t skip = 0;
  std::int64_t extra = 0;
};

/// The bound on a part's `skip` and `extra`: a canonical block's largest row count.
constexpr std::int64_t max_part_shift = 1024;

/// How to move the examples of text parts of `rows[i]` examples each (in file order) so that every
/// part after the first starts a canonical block of `block_rows` rows: {skip, extra} per part, all
/// zero when parts already start blocks (IDX and binary datasets), and empty when some part would
/// be left with no example (parts of fewer rows than a block), where the parts stay as they are.
std::vector<std::pair<std::int64_t, std::int64_t>> block_aligned_shifts(const std::vector<std::int64_t>& rows,
                                                                        std::int64_t block_rows);

/// Reads one part of a dataset without holding the rest:
/// - CSV and LIBSVM by byte ranges aligned to line starts, like Hadoop's input splits: part p of P
///   covers bytes [size*p/P, size*(p+1)/P) and owns every line whose first byte lies there, so the
///   parts together hold every line exactly once, in order. Only part 0 can have a header.
///   gzip-compressed text cannot be split by bytes: it is decompressed and split the same way.
/// - IDX (MNIST layout) by record ranges of whole canonical blocks, as io::partition_blocks(n, P):
///   the rows of local shards.
/// The source names the part ("train.csv (part 2 of 4, bytes 1048576-2097152)") and line numbers
/// count from the part's first line. Errors as for read_dataset, plus a part with no examples, a
/// shift (skip, extra) out of bounds or on data that is not text, and text after the part that
/// holds fewer than `extra` examples.
result<raw_dataset> read_part(const part_request& request);

/// What the driver needs to know of one part to fit the label encoding and feature scaling of the
/// whole dataset without reading it: sizes, distinct labels, per-feature bounds.
struct part_summary {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  bool pixels = false;
  hashing_options hashing;    ///< how the part's features were hashed (none: numbers)
  std::vector<double> labels;  ///< distinct label values, sorted (at most 65,537 kept)
  feature_bounds bounds;       ///< of the raw values; bounds.rows == rows
};

/// Summarises a part read by read_part.
part_summary summarize(const raw_dataset& part);

/// The encoding and scaling of the whole dataset, fitted from its parts' summaries.
struct fitted_parts {
  hashing_options hashing;  ///< the parts' (all alike)
  label_encoding labels;
  feature_scaling scaling;
  std::int64_t features = 0;
  std::int64_t rows = 0;
};

/// The moments of part `part` (0-based) on a grid, however they are obtained (read locally, asked
/// of the node that holds the part).
using part_moments = std::function<result<feature_moments>(std::size_t part, const moment_grid& grid)>;

/// Fits the label encoding (as fit_labels) and scaling (as fit_scaling: bounds from the summaries,
/// moments from `moments`, asked only when standardising) of the union of the parts. Errors: parts
/// that disagree on the feature count (dense data) or kind, moments that do not fit their part, and
/// the label errors of fit_labels; `source` names the dataset in messages.
result<fitted_parts> fit_parts(model::model_kind kind, std::int64_t classes,
                               const std::vector<part_summary>& parts, scale_mode mode,
                               bool standardize, const std::string& source, const part_moments& moments);

} // namespace shardopt::io

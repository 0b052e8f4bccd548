#pragma once

// Features that no training row has, left out of a full-batch solve. Hashed text spreads a few
// hundred thousand features over 2^22 to 2^24 columns; their weights are 0 at the optimum of every
// L2 and L1 objective (their gradient is the regulariser's alone), so a solver over the used
// columns only reaches the same optimum, and its work over the dimension (the driver's sums,
// CG's vector updates) shrinks with them. The weights go back to their columns, as zeros for the
// unused ones, before anyone else sees theta.

#include "model/dataset.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <optional>
#include <vector>

namespace shardopt::io {

/// The used columns of a sparse dataset, in increasing order: column used[k] becomes column k.
struct column_map {
  std::vector<std::int32_t> used;
  std::int64_t features = 0;  ///< columns before the map
};

/// The map of sparse `data`'s used columns, when they are at most `fraction` of its columns;
/// nullopt otherwise (and for dense data): leaving out a few columns saves too little.
std::optional<column_map> used_columns(const model::dataset& data, double fraction = 0.75);

/// The map of the columns whose `stored` count (per column, as io::feature_bounds counts them over
/// every part) is not 0, under the same rule as `used_columns`: sparse data, at most `fraction`.
std::optional<column_map> used_columns(const Eigen::VectorXd& stored, bool sparse, double fraction = 0.75);

/// A column `data` stores an entry in that `map` leaves out (or one past its columns), if any.
std::optional<std::int64_t> first_unused_column(const model::dataset& data, const column_map& map);

/// `data` with its columns renumbered by `map` (every stored index must be a used column): the
/// indices are rewritten in place where the dataset owns them alone, copied otherwise (a mapped
/// binary dataset, a caller's arrays); values, labels and row starts are shared.
model::dataset compact_columns(model::dataset data, const column_map& map);

/// A theta of the linear model `full` from one of the same model over the map's used columns:
/// each output's weights back in their columns, zeros in the unused ones, the biases as they are.
Eigen::VectorXd expand_theta(const model::model_shape& full, const column_map& map,
                             const Eigen::VectorXd& compact);

/// The other way: the weights of the used columns of a theta of `full` (a resumed or initial
/// theta), for the model over them.
Eigen::VectorXd compact_theta(const model::model_shape& full, const column_map& map,
                              const Eigen::VectorXd& theta);

} // namespace shardopt::io

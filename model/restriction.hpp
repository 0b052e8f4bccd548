#pragma once

// A linear model restricted to some of its features, the rest of its weights held at 0: the
// entries of theta that remain and the data's columns it reads (OWL-QN's shrinking,
// optimizer/owlqn.hpp; local_objective::restrict).

#include "model/dataset.hpp"
#include "model/model_shape.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace shardopt::model {

/// The columns `features` of `data` (increasing, each below its cols()), renumbered 0 to
/// features.size() - 1 in that order, with every row and label: what a linear model restricted to
/// those features reads. Sparse rows stay CSR, in shared storage of their own (so the dataset
/// moves without copying them), made in two passes over the non-zeros on this process's threads;
/// dense rows stay dense.
dataset restrict_columns(const dataset& data, const std::vector<std::int64_t>& features);

/// The non-zeros `restrict_columns(data, features, rows, threads)` would keep (0 for dense data),
/// counted on at most `threads` threads without allocating them: what a node admits before it copies.
std::int64_t restricted_nonzeros(const dataset& data, const std::vector<std::int64_t>& features, row_range rows,
                                 unsigned threads);

/// `restrict_columns` of rows `rows` of `data` alone (they become rows 0 to rows.size() - 1), on
/// at most `threads` threads (a node's --threads); the same arrays on any count.
dataset restrict_columns(const dataset& data, const std::vector<std::int64_t>& features, row_range rows,
                         unsigned threads);

/// A linear model's features that any of the entries `wanted` of theta weighs, increasing.
/// Precondition: not a network.
std::vector<std::int64_t> features_of_entries(const model_shape& shape, const std::vector<Eigen::Index>& wanted);

/// A linear model's entries of theta for `features` (increasing), every output's, then its
/// biases: increasing, and in the order of theta for the same model over those features alone.
std::vector<Eigen::Index> entries_of_features(const model_shape& shape, const std::vector<std::int64_t>& features);

} // namespace shardopt::model

// A shard's sparse layout built and asked (model/sparse_kernels.hpp): the numbering pass that finds
// the touched features, their maxima and the rows' largest norm, the choice between numbering the
// touched features and keeping every one, and the answers' entry lists. The passes over the rows
// are in sparse_kernels.cpp.

#include "model/sparse_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace shardopt::model::detail {

sparse_layout::sparse_layout(const model_shape& shape, const dataset& data, row_range rows)
  : first_row_(rows.begin) {
  const auto x = data.sparse();
  const auto* starts = x.outerIndexPtr();
  const auto* index = x.innerIndexPtr();
  const auto* value = x.valuePtr();
  first_nonzero_ = rows.size() > 0 ? starts[rows.begin] : 0;
  const std::int64_t last = rows.size() > 0 ? starts[rows.end] : 0;
  nonzeros_ = last - first_nonzero_;
  // One random access per non-zero marks its feature with the largest |value| so far (-1: not
  // touched); the touched features are then numbered in increasing order.
  std::vector<float> most(static_cast<std::size_t>(shape.features), -1.0F);
  // The features are scattered (hashed text): each access is a cache miss, so the ones a few
  // non-zeros ahead are asked for first. The same pass finds the rows' largest norm, as
  // max_row_norm does (each row's squares in order, a NaN value skipped).
  double most_squares = 0;
  for (auto i = rows.begin; i < rows.end; ++i) {
    double squares = 0;
    for (std::int64_t p = starts[i]; p < starts[i + 1]; ++p) {
      if (p + prefetch_distance < last)
        __builtin_prefetch(&most[static_cast<std::size_t>(index[p + prefetch_distance])], 1);
      auto& m = most[static_cast<std::size_t>(index[p])];
      m = std::max(std::max(m, 0.0F), std::fabs(value[p]));  // touched even by a NaN (which bounds skip)
      squares += std::isnan(value[p]) ? 0.0 : static_cast<double>(value[p]) * static_cast<double>(value[p]);
    }
    most_squares = std::max(most_squares, squares);
  }
  max_row_norm_ = std::sqrt(most_squares);
  touched_ = std::count_if(most.begin(), most.end(), [](float m) { return m >= 0; });
  // Keeping every feature costs each untouched one's record and answer words (six words an
  // output). Numbering the touched ones costs 4 bytes a non-zero (the renumbered indices), the
  // list of the touched features and the answers' entry lists (three entries a touched feature
  // and output: the gradient's, and the gradient's and diagonal's), and a second random pass
  // here. The dataset's own indices serve when that is no more bytes, and when at most a third of
  // the features is untouched: then a dense answer (8 bytes a word) is no longer on the wire than
  // a sparse one (a word and its 4-byte entry each).
  const std::int64_t untouched = shape.features - touched_;
  const std::int64_t dense_bytes = untouched * 6 * static_cast<std::int64_t>(sizeof(double)) * shape.outputs;
  const std::int64_t numbered_bytes =
    static_cast<std::int64_t>(sizeof(std::int32_t)) * (nonzeros_ + touched_ + 3 * touched_ * shape.outputs);
  if (untouched * 3 <= shape.features && dense_bytes <= numbered_bytes) {
    features_ = shape.features;       // every feature a column: its place is itself
    column_max_ = std::move(most);    // -1 where untouched
    return;
  }
  for (std::int64_t j = 0; j < shape.features; ++j)
    if (most[static_cast<std::size_t>(j)] >= 0)
      columns_.push_back(static_cast<std::int32_t>(j));
  column_max_.reserve(columns_.size());
  for (const auto j : columns_)
    column_max_.push_back(most[static_cast<std::size_t>(j)]);
  std::vector<float>().swap(most);  // one dimension-sized array at a time
  std::vector<std::int32_t> place(static_cast<std::size_t>(shape.features), -1);
  for (std::size_t k = 0; k < columns_.size(); ++k)
    place[static_cast<std::size_t>(columns_[k])] = static_cast<std::int32_t>(k);
  local_.resize(static_cast<std::size_t>(last - first_nonzero_));
  for (std::int64_t p = first_nonzero_; p < last; ++p) {
    if (p + prefetch_distance < last)
      __builtin_prefetch(&place[static_cast<std::size_t>(index[p + prefetch_distance])]);
    local_[static_cast<std::size_t>(p - first_nonzero_)] = place[static_cast<std::size_t>(index[p])];
  }
}

bool sparse_layout::max_into(Eigen::Ref<Eigen::VectorXd> feature_max) {
  if (maxima_read_)
    return false;
  max_range(feature_max, 0, feature_max.size());
  forget_maxima();
  return true;
}

void sparse_layout::max_range(Eigen::Ref<Eigen::VectorXd> feature_max, std::int64_t begin, std::int64_t end) const {
  // Columns are features in increasing order (every feature, or the touched ones): those in
  // [begin, end) are one run of columns.
  const auto first = features_ > 0 ? std::min(begin, features_)
                                   : std::lower_bound(columns_.begin(), columns_.end(), begin) - columns_.begin();
  const auto count = static_cast<std::int64_t>(column_max_.size());
  for (auto k = first; k < count; ++k) {
    const auto feature = column(k);
    if (feature >= end)
      break;
    if (column_max_[static_cast<std::size_t>(k)] < 0)
      continue;  // not touched (every feature a column)
    auto& most = feature_max[feature];
    most = std::max(most, static_cast<double>(column_max_[static_cast<std::size_t>(k)]));
  }
}

void sparse_layout::forget_maxima() {
  std::vector<float>().swap(column_max_);
  maxima_read_ = true;
}

const std::shared_ptr<const std::vector<std::int32_t>>& sparse_layout::entries(const model_shape& shape,
                                                                               bool diagonal) {
  auto& cached = entries_[diagonal ? 1 : 0];
  if (cached || features_ > 0)
    return cached;  // every feature a column: no list, the answer is dense
  const auto dimension = shape.dimension();
  auto list = std::make_shared<std::vector<std::int32_t>>();
  list->reserve(static_cast<std::size_t>((diagonal ? 2 : 1) * (columns() + 1) * shape.outputs));
  for (const std::int64_t offset : {std::int64_t{0}, dimension}) {
    if (offset > 0 && !diagonal)
      break;
    for (std::int64_t k = 0; k < shape.outputs; ++k)
      for (const auto j : columns_)  // renumbered
        list->push_back(static_cast<std::int32_t>(offset + k * shape.features + j));
    for (std::int64_t k = 0; k < shape.outputs; ++k)
      list->push_back(static_cast<std::int32_t>(offset + shape.weight_count() + k));
  }
  cached = std::move(list);
  return cached;
}

} // namespace shardopt::model::detail

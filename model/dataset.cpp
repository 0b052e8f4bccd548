#include "model/dataset.hpp"
#include "model/restriction.hpp"

#include "base/parallel.hpp"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace shardopt::model {

namespace {

template <class... F>
struct overloaded : F... {
  using F::operator()...;
};
template <class... F>
overloaded(F...) -> overloaded<F...>;

} // namespace

std::int64_t dataset::rows() const {
  return std::visit(overloaded{[](const dense_features& m) { return std::int64_t{m.rows()}; },
                               [](const sparse_features& m) { return std::int64_t{m.rows()}; },
                               [](const auto& b) { return b.rows; }},
                    x);
}

std::int64_t dataset::cols() const {
  return std::visit(overloaded{[](const dense_features& m) { return std::int64_t{m.cols()}; },
                               [](const sparse_features& m) { return std::int64_t{m.cols()}; },
                               [](const auto& b) { return b.cols; }},
                    x);
}

std::int64_t dataset::nonzeros() const {
  return is_sparse() ? std::int64_t{sparse().nonZeros()} : rows() * cols();
}

dense_view dataset::dense() const {
  if (const auto* b = std::get_if<shared_dense>(&x))
    return {b->values, b->rows, b->cols};
  const auto& m = std::get<dense_features>(x);
  return {m.data(), m.rows(), m.cols()};
}

sparse_view dataset::sparse() const {
  if (const auto* b = std::get_if<shared_sparse>(&x))
    return {b->rows, b->cols, b->starts[b->rows], b->starts, b->indices, b->values};
  const auto& m = std::get<sparse_features>(x);
  // Owned matrices are always compressed (readers build them so; see `own_sparse`).
  return {m.rows(), m.cols(), m.nonZeros(), m.outerIndexPtr(), m.innerIndexPtr(), m.valuePtr()};
}

float* dataset::writable_values() {
  if (auto* d = std::get_if<shared_dense>(&x)) {
    if (d->writable && d->owner.use_count() == 1)
      return d->values;
    x = dense_features{dense_view{d->values, d->rows, d->cols}};
  } else if (auto* c = std::get_if<shared_sparse>(&x)) {
    if (c->writable && c->owner.use_count() == 1)
      return c->values;
    const sparse_view view = sparse();
    sparse_features copy(view.rows(), view.cols());
    copy.resizeNonZeros(view.nonZeros());
    std::copy_n(view.outerIndexPtr(), view.rows() + 1, copy.outerIndexPtr());
    std::copy_n(view.innerIndexPtr(), view.nonZeros(), copy.innerIndexPtr());
    std::copy_n(view.valuePtr(), view.nonZeros(), copy.valuePtr());
    x = std::move(copy);
  }
  if (auto* m = std::get_if<sparse_features>(&x)) {
    m->makeCompressed();
    return m->valuePtr();
  }
  return std::get<dense_features>(x).data();
}

void dataset::widen(std::int64_t new_cols) {
  if (auto* b = std::get_if<shared_sparse>(&x))
    b->cols = new_cols;
  else
    std::get<sparse_features>(x).conservativeResize(rows(), new_cols);
}

std::int64_t restricted_nonzeros(const dataset& data, const std::vector<std::int64_t>& features, row_range rows,
                                 unsigned threads) {
  if (!data.is_sparse())
    return 0;
  const auto x = data.sparse();
  std::vector<std::uint8_t> kept(static_cast<std::size_t>(x.cols()), 0);
  for (const auto j : features)
    kept[static_cast<std::size_t>(j)] = 1;
  const auto* index = x.innerIndexPtr();
  // Pieces of the entries, counted apart and added in order (integers: any split gives the count).
  const std::int64_t begin = x.outerIndexPtr()[rows.begin], end = x.outerIndexPtr()[rows.end];
  threads = std::max(threads, 1u);
  const auto pieces = static_cast<std::size_t>(std::clamp<std::int64_t>((end - begin) / 65536, 1, 4 * std::int64_t{threads}));
  std::vector<std::int64_t> counts(pieces, 0);
  run_parallel(pieces, threads, [&](std::size_t piece) {
    const auto from = begin + (end - begin) * static_cast<std::int64_t>(piece) / static_cast<std::int64_t>(pieces);
    const auto to = begin + (end - begin) * static_cast<std::int64_t>(piece + 1) / static_cast<std::int64_t>(pieces);
    std::int64_t count = 0;
    for (auto p = from; p < to; ++p)
      count += kept[static_cast<std::size_t>(index[p])];
    counts[piece] = count;
  });
  return std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
}

dataset restrict_columns(const dataset& data, const std::vector<std::int64_t>& features) {
  return restrict_columns(data, features, {0, data.rows()}, usable_cpus());
}

dataset restrict_columns(const dataset& data, const std::vector<std::int64_t>& features, row_range range,
                         unsigned threads) {
  assert(range.begin >= 0 && range.begin <= range.end && range.end <= data.rows());
  threads = std::max(threads, 1u);
  dataset out;
  out.y = data.y.segment(range.begin, range.size());
  const auto kept = static_cast<Eigen::Index>(features.size());
  if (!data.is_sparse()) {
    const auto x = data.dense().middleRows(range.begin, range.size());
    dense_features m(x.rows(), kept);
    for (Eigen::Index k = 0; k < kept; ++k)
      m.col(k) = x.col(features[static_cast<std::size_t>(k)]);
    out.x = std::move(m);
    return out;
  }
  // CSR arrays of its own, filled in place (an Eigen sparse matrix has no move: a dataset holding
  // one copies it whenever it moves), on `threads` threads, a range of rows each: per-row
  // counts, their prefix sums, then the entries.
  const auto x = data.sparse();
  const auto rows = range.size();
  const auto* from_starts = x.outerIndexPtr() + range.begin;  // entries stay where they are
  const auto* from_indices = x.innerIndexPtr();
  const auto* from_values = x.valuePtr();
  assert(std::is_sorted(features.begin(), features.end()));
  std::vector<std::int32_t> position(static_cast<std::size_t>(x.cols()), -1);
  for (Eigen::Index k = 0; k < kept; ++k)
    position[static_cast<std::size_t>(features[static_cast<std::size_t>(k)])] = static_cast<std::int32_t>(k);
  struct csr_arrays {
    std::unique_ptr<std::int32_t[]> starts, indices;
    std::unique_ptr<float[]> values;
  };
  auto storage = std::make_shared<csr_arrays>();
  storage->starts.reset(new std::int32_t[static_cast<std::size_t>(rows) + 1]);
  auto* starts = storage->starts.get();
  const auto pieces = static_cast<std::size_t>(std::clamp<std::int64_t>(rows, 1, 8 * std::int64_t{threads}));
  const auto first_row = [&](std::size_t piece) {
    return static_cast<std::int64_t>(static_cast<double>(rows) * static_cast<double>(piece) / static_cast<double>(pieces));
  };
  run_parallel(pieces, threads, [&](std::size_t piece) {
    for (auto r = first_row(piece); r < first_row(piece + 1); ++r) {
      std::int32_t count = 0;
      for (auto i = from_starts[r]; i < from_starts[r + 1]; ++i)
        count += position[static_cast<std::size_t>(from_indices[i])] >= 0;
      starts[r + 1] = count;
    }
  });
  starts[0] = 0;
  for (std::int64_t r = 0; r < rows; ++r)
    starts[r + 1] += starts[r];
  const auto entries = static_cast<std::size_t>(starts[rows]);
  storage->indices.reset(new std::int32_t[std::max<std::size_t>(entries, 1)]);
  storage->values.reset(new float[std::max<std::size_t>(entries, 1)]);
  auto* indices = storage->indices.get();
  auto* values = storage->values.get();
  run_parallel(pieces, threads, [&](std::size_t piece) {
    for (auto r = first_row(piece); r < first_row(piece + 1); ++r) {
      auto at = starts[r];
      for (auto i = from_starts[r]; i < from_starts[r + 1]; ++i)
        if (const auto p = position[static_cast<std::size_t>(from_indices[i])]; p >= 0) {
          indices[at] = p;
          values[at++] = from_values[i];
        }
    }
  });
  out.x = shared_sparse{starts, indices, values, rows, kept, std::move(storage), true};
  return out;
}

} // namespace shardopt::model

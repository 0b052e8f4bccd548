#include "model/dataset.hpp"
#include "model/restriction.hpp"

#include <algorithm>

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

dataset restrict_columns(const dataset& data, const std::vector<std::int64_t>& features) {
  dataset out;
  out.y = data.y;
  const auto kept = static_cast<Eigen::Index>(features.size());
  if (!data.is_sparse()) {
    const auto x = data.dense();
    dense_features m(x.rows(), kept);
    for (Eigen::Index k = 0; k < kept; ++k)
      m.col(k) = x.col(features[static_cast<std::size_t>(k)]);
    out.x = std::move(m);
    return out;
  }
  const auto x = data.sparse();
  std::vector<std::int32_t> position(static_cast<std::size_t>(x.cols()), -1);
  for (Eigen::Index k = 0; k < kept; ++k)
    position[static_cast<std::size_t>(features[static_cast<std::size_t>(k)])] = static_cast<std::int32_t>(k);
  std::int64_t entries = 0;
  for (Eigen::Index i = 0; i < x.nonZeros(); ++i)
    entries += position[static_cast<std::size_t>(x.innerIndexPtr()[i])] >= 0;
  sparse_features m(x.rows(), kept);
  m.reserve(entries);
  for (Eigen::Index r = 0; r < x.outerSize(); ++r) {
    m.startVec(r);
    for (sparse_view::InnerIterator it(x, r); it; ++it)
      if (const auto p = position[static_cast<std::size_t>(it.col())]; p >= 0)
        m.insertBack(r, p) = it.value();
  }
  m.finalize();
  out.x = std::move(m);
  return out;
}

} // namespace shardopt::model

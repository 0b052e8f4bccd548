#include "model/dataset.hpp"

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

} // namespace shardopt::model

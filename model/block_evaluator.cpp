#include "model/block_evaluator.hpp"

#include "model/dense_kernels.hpp"
#include "model/kernels.hpp"
#include "model/sparse_kernels.hpp"
#include "base/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace shardopt::model {

namespace {

using detail::chunk;
using detail::for_each_chunk;

/// The Hessian diagonal's curvature per output and example (dt: outputs x m) from the curvature
/// `chunk_loss` keeps (ct): 1 for least squares, s (1 - s) for logistic, p_k (1 - p_k) for
/// softmax (the diagonal of diag(p) - p p^T), 2 or 0 for the squared hinge.
void diagonal_curvature(model_kind kind, const Eigen::MatrixXd& ct, Eigen::Index outputs, Eigen::Index m,
                        Eigen::MatrixXd& dt) {
  dt.resize(outputs, m);
  switch (kind) {
    case model_kind::linear:
      dt.setOnes();
      break;
    case model_kind::softmax:
      dt = ct.array() * (1.0 - ct.array());
      break;
    default:
      dt = ct;
      break;
  }
}

/// The curvature rows `chunk_loss` keeps for a kind: none for least squares, one for logistic,
/// one per output otherwise.
Eigen::Index curvature_rows(const model_shape& shape) {
  return shape.kind == model_kind::linear ? 0 : shape.kind == model_kind::logistic ? 1 : shape.outputs;
}

} // namespace

block_evaluator::block_evaluator(model_shape shape, std::shared_ptr<const dataset> data, row_range rows,
                                 std::int64_t block_rows)
  : shape_(std::move(shape)), data_(std::move(data)), rows_(rows), block_rows_(block_rows),
    blocks_(blocks_of(rows, block_rows)), keeps_(!shape_.is_network()) {
  if (keeps_ && data_->is_sparse())
    sparse_ = std::make_unique<detail::sparse_layout>(shape_, *data_, rows_);
}

block_evaluator::~block_evaluator() = default;
block_evaluator::block_evaluator(block_evaluator&&) noexcept = default;
block_evaluator& block_evaluator::operator=(block_evaluator&&) noexcept = default;

std::int64_t block_evaluator::touched_features() const {
  return sparse_ ? sparse_->touched() : 0;
}

bool block_evaluator::renumbered() const {
  return sparse_ && sparse_->renumbered();
}

std::int64_t block_evaluator::working_bytes() const {
  // In doubles, which hold every product exactly enough to compare with a limit.
  const double dimension = static_cast<double>(shape_.dimension());
  const double outputs = static_cast<double>(shape_.outputs);
  const double rows = static_cast<double>(rows_.size());
  const double features = static_cast<double>(shape_.features);
  const double chunk = 2 * 8 * std::min(rows, 256.0) * features;  // dense rows: a chunk's copies
  double bytes = 0;
  if (shape_.is_network()) {
    // The gradient's sums and their exact words; a chunk of rows' activations through the layers.
    double widths = outputs;
    for (const auto width : shape_.hidden)
      widths += static_cast<double>(width);
    bytes = 16 * dimension + 8 * 256 * 2 * widths + (data_->is_sparse() ? 0 : chunk);
  } else {
    bytes = 24 * outputs * rows;  // the last two evaluations' scores and the latest's curvature
    if (sparse_) {
      const double columns = static_cast<double>(sparse_->columns());
      const auto x = data_->sparse();
      const double nonzeros = static_cast<double>(x.outerIndexPtr()[rows_.end] - x.outerIndexPtr()[rows_.begin]);
      // Records with the diagonal, the cached entry lists, the renumbered indices, the columns
      // with their maxima, and the answer: its touched entries' words, or every entry's when the
      // layout keeps every feature. With several outputs a recall or a quality pass copies W.
      bytes += 32 * columns * outputs + 12 * (columns + 1) * outputs + 4 * nonzeros + 8 * columns;
      bytes += sparse_->renumbered() ? 16 * (columns + 1) * outputs : 16 * dimension + 4 * features;
      if (shape_.outputs > 1)
        bytes += 8 * features * outputs;
    } else {
      bytes += 32 * dimension + chunk;  // the gradient's and the diagonal's sums, with their words
    }
  }
  constexpr double most = 4.611686018427387904e18;  // 2^62
  return static_cast<std::int64_t>(std::min(bytes, most));
}

void block_evaluator::add_bounds_to(data_bounds& total) {
  if (!sparse_ || rows_.size() <= 0 ||
      (total.feature_max.size() != 0 && total.feature_max.size() != data_->cols())) {
    total += bounds_of(*data_, rows_, block_rows_);
    return;
  }
  if (total.feature_max.size() == 0)
    total.feature_max = Eigen::VectorXd::Zero(data_->cols());
  if (!sparse_->max_into(total.feature_max)) {
    total += bounds_of(*data_, rows_, block_rows_);
    return;
  }
  total.max_label = std::max(total.max_label, data_->y.segment(rows_.begin, rows_.size()).cwiseAbs().maxCoeff());
  total.max_row_norm = std::max(total.max_row_norm, sparse_->max_row_norm());
  total.blocks += block_count(rows_.size(), block_rows_);
  total.bits = std::min(total.bits, packed_bits);
}

void block_evaluator::add_bounds_of(const std::vector<block_evaluator*>& evaluators, data_bounds& total,
                                    unsigned threads) {
  // The layouts' maxima merged together where each evaluator has them (into `total`'s maxima, or
  // a new vector of them); any other evaluator adds its bounds as add_bounds_to does.
  std::vector<block_evaluator*> merged, others;
  const auto features = evaluators.empty() ? 0 : evaluators.front()->data_->cols();
  const bool fresh = total.feature_max.size() == 0;  // else raised where it stands
  for (auto* e : evaluators) {
    const bool held = e->sparse_ && e->rows_.size() > 0 && e->sparse_->holds_maxima() && e->data_->cols() == features;
    (held && (fresh || total.feature_max.size() == features) ? merged : others).push_back(e);
  }
  if (merged.empty()) {
    for (auto* e : evaluators)
      e->add_bounds_to(total);
    return;
  }
  if (fresh)
    total.feature_max.resize(features);  // each entry written below, once, by the thread of its range
  const auto parts = 8 * static_cast<std::int64_t>(std::max(threads, 1U));  // ranges a thread, about
  const auto range = std::max<std::int64_t>(64, (features + parts - 1) / parts);
  const auto ranges = static_cast<std::size_t>((features + range - 1) / range);
  run_parallel(ranges, threads, [&](std::size_t r) {
    const auto begin = static_cast<std::int64_t>(r) * range;
    const auto end = std::min(begin + range, features);
    if (fresh)
      total.feature_max.segment(begin, end - begin).setZero();
    for (const auto* e : merged)
      e->sparse_->max_range(total.feature_max, begin, end);
  });
  for (auto* e : merged) {
    e->sparse_->forget_maxima();
    total.max_label =
      std::max(total.max_label, e->data_->y.segment(e->rows_.begin, e->rows_.size()).cwiseAbs().maxCoeff());
    total.max_row_norm = std::max(total.max_row_norm, e->sparse_->max_row_norm());
    total.blocks += block_count(e->rows_.size(), e->block_rows_);
    total.bits = std::min(total.bits, packed_bits);
  }
  for (auto* e : others)
    e->add_bounds_to(total);
}

void block_evaluator::push_latest(std::uint64_t tag) {
  latest_ = 1 - latest_;
  previous_tag_ = latest_tag_;
  latest_tag_ = tag;
  scores_[latest_].resize(shape_.outputs, rows_.size());
  curvature_.resize(curvature_rows(shape_), rows_.size());
}

entry_sums block_evaluator::loss_grad(Eigen::Ref<const Eigen::VectorXd> theta, const grid& g,
                                      std::vector<double>& losses, std::uint64_t tag) {
  const auto dimension = static_cast<std::size_t>(shape_.dimension());
  const bool diagonal = keeps_ && g.size() == 2 * dimension;
  if (shape_.is_network()) {
    dense_sum_.reset(g);
    Eigen::VectorXd sums(shape_.dimension());
    losses.clear();
    for (const auto& block : blocks_) {
      losses.push_back(detail::network_loss_grad_sum(shape_, *data_, block, theta, sums));
      dense_sum_.deposit(0, sums);
    }
    return entry_sums{nullptr, dense_sum_.take_words(), dense_sum_.max_units()};
  }
  push_latest(tag);
  Eigen::MatrixXd& kept_scores = scores_[latest_];
  const auto kind = shape_.kind;
  const auto outputs = shape_.outputs;
  Eigen::MatrixXd ct;
  Eigen::VectorXd y;
  if (sparse_) {
    // The residual of each chunk, keeping its scores and curvature for products and lines.
    return sparse_->pass(
      shape_, *data_, blocks_, block_rows_, theta.data(), g, diagonal,
      [&](const detail::sparse_layout::chunk_work& work) {
        const auto m = work.zt.cols();
        y = data_->y.segment(rows_.begin + work.first, m);
        const double loss = detail::chunk_loss(kind, work.zt, y, work.rt, &ct);
        kept_scores.middleCols(work.first, m) = work.zt;
        if (ct.size() > 0)
          curvature_.middleCols(work.first, m) = ct;
        if (diagonal)
          diagonal_curvature(kind, ct, outputs, m, work.dt);
        return loss;
      },
      losses);
  }
  // Dense rows: each block summed in double by matrix products, rounded once per entry.
  dense_sum_.reset(g);
  detail::dense_products products{shape_, *data_, theta};
  Eigen::VectorXd sums = Eigen::VectorXd::Zero(shape_.dimension());
  Eigen::VectorXd diagonal_sums = Eigen::VectorXd::Zero(diagonal ? shape_.dimension() : 0);
  Eigen::Map<Eigen::MatrixXd> grad_w(sums.data(), shape_.features, outputs);
  Eigen::Map<Eigen::VectorXd> grad_b(sums.data() + shape_.weight_count(), outputs);
  Eigen::MatrixXd zt, rt, dt;
  losses.clear();
  for (const auto& block : blocks_) {
    double loss = 0;
    const row_selection selection = block;
    for_each_chunk(selection, [&](const chunk& c) {
      const auto first = c.row(0) - rows_.begin;
      products.forward(c, zt);
      detail::gather_labels(*data_, c, y);
      rt.resize(zt.rows(), zt.cols());
      loss += detail::chunk_loss(kind, zt, y, rt, &ct);
      kept_scores.middleCols(first, c.count) = zt;
      if (ct.size() > 0)
        curvature_.middleCols(first, c.count) = ct;
      products.backward(rt, grad_w, grad_b);
      if (diagonal) {
        diagonal_curvature(kind, ct, outputs, c.count, dt);
        Eigen::Map<Eigen::MatrixXd> diag_w(diagonal_sums.data(), shape_.features, outputs);
        Eigen::Map<Eigen::VectorXd> diag_b(diagonal_sums.data() + shape_.weight_count(), outputs);
        products.backward_squared(dt, diag_w, diag_b);
      }
    });
    losses.push_back(loss);
    dense_sum_.deposit(0, sums);
    sums.setZero();
    if (diagonal) {
      dense_sum_.deposit(dimension, diagonal_sums);
      diagonal_sums.setZero();
    }
  }
  return entry_sums{nullptr, dense_sum_.take_words(), dense_sum_.max_units()};
}

void block_evaluator::recall(Eigen::Ref<const Eigen::VectorXd> theta, std::uint64_t tag) {
  if (!keeps_)
    return;
  push_latest(tag);
  Eigen::MatrixXd& kept_scores = scores_[latest_];
  Eigen::MatrixXd zt, rt, ct;
  Eigen::VectorXd y;
  // Block by block and chunk by chunk, as an evaluation goes: a dense chunk's matrix product sums in
  // an order that depends on the chunk's size.
  const auto each = [&](auto& products) {
    for (const auto& block : blocks_) {
      const row_selection selection = block;
      for_each_chunk(selection, [&](const chunk& c) {
        const auto first = c.row(0) - rows_.begin;
        products.forward(c, zt);
        detail::gather_labels(*data_, c, y);
        rt.resize(zt.rows(), zt.cols());
        detail::chunk_loss(shape_.kind, zt, y, rt, &ct);
        kept_scores.middleCols(first, c.count) = zt;
        if (ct.size() > 0)
          curvature_.middleCols(first, c.count) = ct;
      });
    }
  };
  // The same scores, bit for bit, as an evaluation's: the same products in the same order.
  if (data_->is_sparse()) {
    detail::sparse_products products{shape_, *data_, theta};
    each(products);
  } else {
    detail::dense_products products{shape_, *data_, theta};
    each(products);
  }
}

entry_sums block_evaluator::hessian_vector(Eigen::Ref<const Eigen::VectorXd> v, const grid& g) {
  const auto kind = shape_.kind;
  Eigen::MatrixXd ct;
  std::vector<double> unused;
  if (sparse_) {
    return sparse_->pass(
      shape_, *data_, blocks_, block_rows_, v.data(), g, false,
      [&](const detail::sparse_layout::chunk_work& work) {
        if (curvature_.size() > 0)
          ct = curvature_.middleCols(work.first, work.zt.cols());
        detail::chunk_curvature_product(kind, ct, work.zt, work.rt);
        return 0.0;
      },
      unused);
  }
  dense_sum_.reset(g);
  detail::dense_products products{shape_, *data_, v};
  Eigen::VectorXd sums = Eigen::VectorXd::Zero(shape_.dimension());
  Eigen::Map<Eigen::MatrixXd> hv_w(sums.data(), shape_.features, shape_.outputs);
  Eigen::Map<Eigen::VectorXd> hv_b(sums.data() + shape_.weight_count(), shape_.outputs);
  Eigen::MatrixXd ut, qt;
  for (const auto& block : blocks_) {
    const row_selection selection = block;
    for_each_chunk(selection, [&](const chunk& c) {
      products.forward(c, ut);
      if (curvature_.size() > 0)
        ct = curvature_.middleCols(c.row(0) - rows_.begin, c.count);
      detail::chunk_curvature_product(kind, ct, ut, qt);
      products.backward(qt, hv_w, hv_b);
    });
    dense_sum_.deposit(0, sums);
    sums.setZero();
  }
  return entry_sums{nullptr, dense_sum_.take_words(), dense_sum_.max_units()};
}

void block_evaluator::line_losses(const std::vector<double>& alphas, std::vector<double>& out) const {
  out.assign(blocks_.size() * alphas.size(), 0.0);
  const Eigen::MatrixXd& to = scores_[latest_];
  const Eigen::MatrixXd& from = scores_[1 - latest_];
  Eigen::MatrixXd zt, rt;
  Eigen::VectorXd y;
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    const row_selection selection = blocks_[b];
    for (std::size_t a = 0; a < alphas.size(); ++a) {
      const double alpha = alphas[a];
      double loss = 0;
      for_each_chunk(selection, [&](const chunk& c) {
        const auto first = c.row(0) - rows_.begin;
        const auto z_from = from.middleCols(first, c.count);
        zt = z_from + alpha * (to.middleCols(first, c.count) - z_from);
        detail::gather_labels(*data_, c, y);
        rt.resize(zt.rows(), zt.cols());
        loss += detail::chunk_loss(shape_.kind, zt, y, rt);
      });
      out[b * alphas.size() + a] = loss;
    }
  }
}

std::vector<quality_sums> block_evaluator::quality(Eigen::Ref<const Eigen::VectorXd> theta) const {
  std::vector<quality_sums> out;
  out.reserve(blocks_.size());
  for (const auto& block : blocks_)
    out.push_back(model::quality(shape_, *data_, block, theta));
  return out;
}

} // namespace shardopt::model

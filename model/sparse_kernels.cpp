#include "model/sparse_kernels.hpp"

#include "model/fixed_point.hpp"
#include "base/spare_words.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace shardopt::model::detail {

namespace {

/// Rows that an exact pass runs forward, through the loss and backward at a time: the lines its
/// forward half gathered (64 rows of 40 non-zeros take 40 KB) are still in cache when its backward
/// half scatters into them.
constexpr std::int64_t fused_rows = 64;

/// A pass's view of a layout's records (sparse_kernels.hpp): per column j, `outputs`
/// coefficients, then `outputs` words, then (with the diagonal) `outputs` diagonal words. A word
/// keeps its entry's grid (binades below the coarsest, one byte) in its low 8 bits and the integer
/// sum above them: adding a term shifted by 8 leaves the grid in place, and 56 bits hold every
/// partial sum within the 2^55 units the grids allow (exact_sum.hpp).
class records {
public:
  records(std::uint64_t* slots, std::int64_t outputs, bool diagonal, int base)
    : slots_(slots), stride_((diagonal ? 4 : 2) * outputs), base_(base) {
    // 2^below, where the grid 2^(base - below) is the exponent exact_sum uses (no finer than
    // lowest_grid).
    for (int b = 0; b <= max_grid_below; ++b)
      steps_[static_cast<std::size_t>(b)] = power_of_two(std::min(b, base_ - lowest_grid));
  }

  /// Where feature j's record starts; `Stride` is the record's length when fixed at compile time.
  template <int Stride = 0>
  std::size_t slot_of(std::int32_t feature) const {
    return static_cast<std::size_t>(Stride > 0 ? Stride : stride_) * static_cast<std::size_t>(feature);
  }

  double coefficient(std::size_t slot) const {
    double value;
    std::memcpy(&value, &slots_[slot], sizeof value);
    return value;
  }

  /// Asks for every cache line of feature j's record: the scatter writes the words the gather
  /// did not read.
  template <int Stride>
  void prefetch(std::int32_t feature) const {
    const auto* record = reinterpret_cast<const char*>(&slots_[slot_of<Stride>(feature)]);
    const auto bytes = static_cast<std::int64_t>(sizeof(std::uint64_t)) * (Stride > 0 ? Stride : stride_);
    for (std::int64_t at = 0; at < bytes; at += 64)
      __builtin_prefetch(record + at, 1);
  }

  /// A residual r in units of the coarsest grid: what `add` takes.
  double coarse(double r) const { return scaled(r, -base_); }

  /// Adds x * r rounded to the grid of the word in `slot`, where `coarse_r` = coarse(r): the
  /// units are x * (coarse_r * 2^below), every product with a power of two exact, so the same
  /// bits as x * (r * 2^-exponent) for any residual a bounded term can have.
  void add(std::size_t slot, double x, double coarse_r) {
    const std::uint64_t word = slots_[slot];
    const double step = coarse_r * steps_[word & 0xff];
    slots_[slot] = word + (static_cast<std::uint64_t>(round_units(x * step)) << 8);
  }

  /// Adds x * r_k for each of `outputs` outputs to the words from `slot` on, as `add` does each
  /// (several outputs: a loop the compiler vectorises; nearbyint rounds as cvtsd2si does).
  void add_outputs(std::size_t slot, double x, const double* coarse_r, std::int64_t outputs) {
    std::uint64_t* words = &slots_[slot];
    if (base_ - lowest_grid < max_grid_below) {  // grids clamped at the finest: from the table
      for (std::int64_t k = 0; k < outputs; ++k)
        add(slot + static_cast<std::size_t>(k), x, coarse_r[k]);
      return;
    }
    for (std::int64_t k = 0; k < outputs; ++k) {
      const std::uint64_t word = words[k];
      // 2^below from its bits (the table's value when no grid is clamped), without a gather.
      const std::uint64_t power = ((word & 0xff) + 1023) << 52;
      double step;
      std::memcpy(&step, &power, sizeof step);
      const double units = std::clamp(x * (coarse_r[k] * step), -unit_limit, unit_limit);
      words[k] = word + (static_cast<std::uint64_t>(static_cast<std::int64_t>(std::nearbyint(units))) << 8);
    }
  }

private:
  std::uint64_t* slots_;
  std::int64_t stride_;
  int base_;
  std::array<double, max_grid_below + 1> steps_{};
};

/// The scores zt (outputs x m) of a chunk's rows: for row i, z_k = sum over its non-zeros (in
/// order) of x_ij coefficient(j, k), plus b_k. `index` is the rows' feature numbering (global or
/// a layout's local one) and `starts` their offsets into it and into the values, from `offset`.
/// `prefetch(j)` asks for feature j's line a few non-zeros ahead. `Outputs` is the output count
/// when fixed at compile time (1), else 0.
template <int Outputs, class Coefficient, class Prefetch>
void scores_of(const std::int32_t* starts, const std::int32_t* index, const float* value,
               std::int64_t offset, std::int64_t last, const chunk& c, std::int64_t outputs_,
               const double* b, Eigen::MatrixXd& zt, Coefficient coefficient, Prefetch prefetch) {
  const std::int64_t outputs = Outputs > 0 ? Outputs : outputs_;
  zt.resize(outputs, c.count);
  for (std::int64_t j = 0; j < c.count; ++j) {
    const auto row = c.row(j);
    double* z = zt.col(j).data();
    for (std::int64_t k = 0; k < outputs; ++k)
      z[k] = 0;
    for (std::int64_t p = starts[row] - offset; p < starts[row + 1] - offset; ++p) {
      if (p < last - prefetch_distance)
        prefetch(index[p + prefetch_distance]);
      const double v = value[p];
      for (std::int64_t k = 0; k < outputs; ++k)
        z[k] += v * coefficient(index[p], k);
    }
    for (std::int64_t k = 0; k < outputs; ++k)
      z[k] += b[k];
  }
}

/// The largest |r_k| 2^-e_k over a chunk's residuals (rt: outputs x m), e_k output k's grid in
/// `grids`; NaN for a non-finite one.
double largest_units(const Eigen::MatrixXd& rt, const std::vector<int>& grids) {
  double most = 0;
  for (Eigen::Index j = 0; j < rt.cols(); ++j)
    for (Eigen::Index k = 0; k < rt.rows(); ++k) {
      const double units = scaled(std::fabs(rt(k, j)), -grids[static_cast<std::size_t>(k)]);
      if (!(units <= std::numeric_limits<double>::max()))
        return std::numeric_limits<double>::quiet_NaN();
      most = std::max(most, units);
    }
  return most;
}

/// Adds the terms x_ij r_jk of a chunk's rows (rt: outputs x m) to the words in `rec`, and with
/// `Diagonal` the terms x_ij^2 d_jk (dt) to the diagonal words. `Outputs` is 1 when fixed at
/// compile time, else 0; `Stride` the record's length then.
template <int Outputs, bool Diagonal>
void scatter(const std::int32_t* starts, const std::int32_t* index, const float* value, std::int64_t offset,
             const chunk& c, const Eigen::MatrixXd& rt, const Eigen::MatrixXd& dt, records& rec,
             std::int64_t outputs_, std::vector<double>& coarse_) {
  constexpr int stride = Outputs > 0 ? (Diagonal ? 4 : 2) * Outputs : 0;
  const std::int64_t outputs = Outputs > 0 ? Outputs : outputs_;
  coarse_.resize(static_cast<std::size_t>(2 * outputs));
  double* rc = coarse_.data();
  double* dc = rc + outputs;
  for (std::int64_t j = 0; j < c.count; ++j) {
    const auto row = c.row(j);
    for (std::int64_t k = 0; k < outputs; ++k) {
      rc[k] = rec.coarse(rt(k, j));
      if (Diagonal)
        dc[k] = rec.coarse(dt(k, j));
    }
    for (std::int64_t p = starts[row] - offset; p < starts[row + 1] - offset; ++p) {
      const double v = value[p];
      const auto slot = rec.template slot_of<stride>(index[p]) + static_cast<std::size_t>(outputs);
      if (Outputs == 1) {
        rec.add(slot, v, rc[0]);
        if (Diagonal)
          rec.add(slot + 1, v * v, dc[0]);
      } else {
        rec.add_outputs(slot, v, rc, outputs);
        if (Diagonal)
          rec.add_outputs(slot + static_cast<std::size_t>(outputs), v * v, dc, outputs);
      }
    }
  }
}

/// The fused chunk loop of a pass, with the output count and diagonal fixed at compile time where
/// they can be.
template <int Outputs, bool Diagonal>
void chunk_pass(const std::int32_t* starts, const std::int32_t* index, const float* value, std::int64_t offset,
                std::int64_t last, const chunk& c, records& rec, std::int64_t outputs, const double* b,
                Eigen::MatrixXd& zt, Eigen::MatrixXd& rt, Eigen::MatrixXd& dt,
                std::vector<double>& coarse, double& loss, std::int64_t first_row,
                const sparse_layout::residual_function& residual) {
  constexpr int stride = Outputs > 0 ? (Diagonal ? 4 : 2) * Outputs : 0;
  scores_of<Outputs>(
    starts, index, value, offset, last, c, outputs, b, zt,
    [&](std::int32_t feature, std::int64_t k) {
      return rec.coefficient(rec.template slot_of<stride>(feature) + static_cast<std::size_t>(k));
    },
    [&](std::int32_t feature) { rec.template prefetch<stride>(feature); });
  rt.resize(zt.rows(), zt.cols());
  if (Diagonal)
    dt.resize(zt.rows(), zt.cols());
  loss += residual(sparse_layout::chunk_work{c.row(0) - first_row, zt, rt, dt});
  scatter<Outputs, Diagonal>(starts, index, value, offset, c, rt, dt, rec, outputs, coarse);
}

} // namespace

entry_sums sparse_layout::pass(const model_shape& shape, const dataset& data,
                               const std::vector<row_range>& blocks, std::int64_t block_rows,
                               const double* coefficients, const grid& g, bool diagonal,
                               const residual_function& residual, std::vector<double>& losses) {
  const auto x = data.sparse();
  const auto outputs = shape.outputs;
  const auto features = shape.features;
  const auto weights = shape.weight_count();
  const auto dimension = shape.dimension();
  const auto m = columns();
  const std::int64_t stride = (diagonal ? 4 : 2) * outputs;
  // Fill the records: each column's coefficients, and its words empty on their grids.
  records_.resize(static_cast<std::size_t>(m * stride));
  const auto& below = *g.below;
  for (std::int64_t j = 0; j < m; ++j) {
    std::uint64_t* record = &records_[static_cast<std::size_t>(j * stride)];
    const auto feature = column(j);
    for (std::int64_t k = 0; k < outputs; ++k) {
      const auto entry = static_cast<std::size_t>(k * features + feature);
      std::memcpy(&record[k], &coefficients[entry], sizeof(double));
      record[outputs + k] = below[entry];
      if (diagonal)
        record[2 * outputs + k] = below[static_cast<std::size_t>(dimension) + entry];
    }
  }
  records rec{records_.data(), outputs, diagonal, g.base};
  // The biases' grids (and the diagonal's), and their per-block exact sums.
  const std::int64_t halves = diagonal ? 2 : 1;
  std::vector<int> bias_grids(static_cast<std::size_t>(halves * outputs));
  for (std::int64_t h = 0; h < halves; ++h)
    for (std::int64_t k = 0; k < outputs; ++k)
      bias_grids[static_cast<std::size_t>(h * outputs + k)] =
        g.exponent(static_cast<std::size_t>(h * dimension + weights + k));
  std::vector<std::int64_t> bias_words(static_cast<std::size_t>(halves * outputs), 0);
  double bias_units = 0;
  const std::vector<int> residual_grids(bias_grids.begin(), bias_grids.begin() + outputs);
  const std::vector<int> diagonal_grids(bias_grids.begin() + (diagonal ? outputs : 0), bias_grids.end());
  Eigen::MatrixXd zt, rt, dt;
  Eigen::VectorXd sums(halves * outputs);
  std::vector<double> coarse;
  double most = 0;
  const auto* starts = x.outerIndexPtr();
  const auto* value = x.valuePtr() + first_nonzero_;
  const auto* index = local_.empty() ? x.innerIndexPtr() + first_nonzero_ : local_.data();
  const auto last = nonzeros_;
  losses.assign(blocks.size(), 0.0);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const row_selection rows = blocks[b];
    double loss = 0;
    sums.setZero();
    for_each_chunk(rows, [&](const chunk& c) {
      if (outputs == 1 && !diagonal)
        chunk_pass<1, false>(starts, index, value, first_nonzero_, last, c, rec, outputs,
                             coefficients + weights, zt, rt, dt, coarse, loss, first_row_, residual);
      else if (outputs == 1)
        chunk_pass<1, true>(starts, index, value, first_nonzero_, last, c, rec, outputs,
                            coefficients + weights, zt, rt, dt, coarse, loss, first_row_, residual);
      else if (!diagonal)
        chunk_pass<0, false>(starts, index, value, first_nonzero_, last, c, rec, outputs,
                             coefficients + weights, zt, rt, dt, coarse, loss, first_row_, residual);
      else
        chunk_pass<0, true>(starts, index, value, first_nonzero_, last, c, rec, outputs,
                            coefficients + weights, zt, rt, dt, coarse, loss, first_row_, residual);
      // Every weight term is at most twice its residual in its output's bias-grid units (see
      // `pass`'s caller): the largest residual bounds them all.
      for (const double units : {largest_units(rt, residual_grids),
                                 diagonal ? largest_units(dt, diagonal_grids) : 0.0})
        if (std::isnan(units) || (!std::isnan(most) && units > most))  // once NaN, NaN
          most = units;
      sums.head(outputs) += rt.rowwise().sum();
      if (diagonal)
        sums.tail(outputs) += dt.rowwise().sum();
    }, fused_rows);
    // The block's bias sums, rounded once per block.
    for (std::int64_t i = 0; i < halves * outputs; ++i) {
      const double value_units = scaled(sums[i], -bias_grids[static_cast<std::size_t>(i)]);
      if (!(std::fabs(value_units) <= std::numeric_limits<double>::max()))
        bias_units = std::numeric_limits<double>::quiet_NaN();
      else if (!std::isnan(bias_units))
        bias_units = std::max(bias_units, std::fabs(value_units));
      if (std::isfinite(value_units))
        bias_words[static_cast<std::size_t>(i)] = add_units(bias_words[static_cast<std::size_t>(i)], value_units);
    }
    losses[b] = loss;
  }
  // The answer: each output's column words, the biases', then the diagonal's (dense: all columns).
  entry_sums out;
  out.entries = entries(shape, diagonal);
  // Every word is written below.
  out.words = spare_words(out.entries ? out.entries->size() : static_cast<std::size_t>(halves * dimension));
  std::size_t at = 0;
  for (std::int64_t h = 0; h < halves; ++h) {
    for (std::int64_t k = 0; k < outputs; ++k)
      for (std::int64_t j = 0; j < m; ++j)  // arithmetic shift: the sign of the 56-bit sum
        out.words[at++] = static_cast<std::int64_t>(records_[static_cast<std::size_t>(j * stride + (h + 1) * outputs + k)]) >> 8;
    for (std::int64_t k = 0; k < outputs; ++k)
      out.words[at++] = bias_words[static_cast<std::size_t>(h * outputs + k)];
  }
  // The weights' terms are bounded as block sums are (block_bounds.hpp): |x_ij| <= max_j and the
  // residual's bound, the ones their grids and output k's bias grid come from, so every term is at
  // most twice its residual in bias-grid units. That, times the rows per block (and 2^7: see
  // `packed_bits`), is the pass's largest deposit: a function of the rows alone, like the terms.
  const double terms = std::isnan(most) ? most
                       : std::ldexp(2 * most * static_cast<double>(std::max<std::int64_t>(block_rows, 1)),
                                    fixed_bits - packed_bits);
  out.max_units = std::isnan(terms) || std::isnan(bias_units) ? std::numeric_limits<double>::quiet_NaN()
                                                              : std::max(terms, bias_units);
  return out;
}

sparse_products::sparse_products(const model_shape& shape, const dataset& data,
                                 Eigen::Ref<const Eigen::VectorXd> theta)
  : x_(data.sparse()), outputs_(shape.outputs), w_(theta.data()),
    b_(theta.data() + shape.weight_count(), shape.outputs) {
  if (outputs_ == 1)
    return;
  // Several outputs: a non-zero reads one row of W, so W is copied row-major.
  const auto features = shape.features;
  w_rows_.resize(static_cast<std::size_t>(features * outputs_));
  for (std::int64_t k = 0; k < outputs_; ++k)
    for (std::int64_t j = 0; j < features; ++j)
      w_rows_[static_cast<std::size_t>(j * outputs_ + k)] = theta[k * features + j];
  w_ = w_rows_.data();
}

void sparse_products::forward(const chunk& c, Eigen::MatrixXd& zt) const {
  const auto coefficient = [this](std::int32_t feature, std::int64_t k) {
    return w_[static_cast<std::int64_t>(feature) * outputs_ + k];
  };
  const auto prefetch = [this](std::int32_t feature) {
    __builtin_prefetch(w_ + static_cast<std::int64_t>(feature) * outputs_);
  };
  const auto* starts = x_.outerIndexPtr();
  const auto* index = x_.innerIndexPtr();
  const auto* value = x_.valuePtr();
  const auto last = static_cast<std::int64_t>(x_.nonZeros());
  if (outputs_ == 1)
    scores_of<1>(starts, index, value, 0, last, c, outputs_, b_.data(), zt, coefficient, prefetch);
  else
    scores_of<0>(starts, index, value, 0, last, c, outputs_, b_.data(), zt, coefficient, prefetch);
}

void sparse_products::backward(const chunk& c, const Eigen::MatrixXd& rt, double* grad_rows,
                               Eigen::Ref<Eigen::VectorXd> grad_b) const {
  const auto* starts = x_.outerIndexPtr();
  const auto* index = x_.innerIndexPtr();
  const auto* value = x_.valuePtr();
  const auto last = static_cast<std::int32_t>(x_.nonZeros());
  for (std::int64_t j = 0; j < c.count; ++j) {
    const auto row = c.row(j);
    const double* r = rt.col(j).data();
    for (auto p = starts[row]; p < starts[row + 1]; ++p) {
      if (p < last - prefetch_distance)
        __builtin_prefetch(grad_rows + static_cast<std::int64_t>(index[p + prefetch_distance]) * outputs_, 1);
      const double v = value[p];
      double* g = grad_rows + static_cast<std::int64_t>(index[p]) * outputs_;
      for (std::int64_t k = 0; k < outputs_; ++k)
        g[k] += v * r[k];
    }
  }
  grad_b += rt.rowwise().sum();
}

} // namespace shardopt::model::detail

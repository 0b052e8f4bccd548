#include "model/sparse_kernels.hpp"

#include "model/fixed_point.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace shardopt::model::detail {

namespace {

/// How far ahead, in non-zeros, a pass asks for the cache line of the feature it will read: enough
/// to keep some twenty misses in flight where theta does not fit in cache.
constexpr std::int32_t prefetch_distance = 32;

/// Rows that an exact pass runs forward, through the loss and backward at a time: the lines its
/// forward half gathered (64 rows of 40 non-zeros take 40 KB) are still in cache when its backward
/// half scatters into them.
constexpr std::int64_t fused_rows = 64;

/// Per feature, the coefficients a pass gathers (theta's or v's weights for every output) next to
/// the words its terms are added to, so that a row's gather brings in the lines its scatter
/// writes. A word keeps its entry's grid (binades below the coarsest, one byte) in its low 8 bits
/// and the integer sum above them: adding a term shifted by 8 leaves the grid in place, and 56
/// bits hold every partial sum within the 2^55 units the grids allow (exact_sum.hpp).
class records {
public:
  records(const model_shape& shape, const double* coefficients, const exact_sum& sum)
    : features_(shape.features), outputs_(shape.outputs), base_(sum.base()),
      slots_(static_cast<std::size_t>(2 * features_ * outputs_)) {
    const auto& below = sum.below();
    for (std::int64_t j = 0; j < features_; ++j)
      for (std::int64_t k = 0; k < outputs_; ++k) {
        const auto entry = static_cast<std::size_t>(k * features_ + j);
        std::memcpy(&slots_[slot_of(j) + static_cast<std::size_t>(k)], &coefficients[entry], sizeof(double));
        slots_[slot_of(j) + static_cast<std::size_t>(outputs_ + k)] = below[entry];
      }
    // 2^below, where the grid 2^(base - below) is the exponent exact_sum uses (no finer than
    // lowest_grid).
    for (int b = 0; b <= max_grid_below; ++b)
      steps_[static_cast<std::size_t>(b)] = power_of_two(std::min(b, base_ - lowest_grid));
  }

  /// Where feature j's record starts; `Outputs` is the output count when fixed at compile time.
  template <int Outputs = 0>
  std::size_t slot_of(std::int64_t feature) const {
    return static_cast<std::size_t>(2 * (Outputs > 0 ? Outputs : outputs_) * feature);
  }

  double coefficient(std::size_t slot) const {
    double value;
    std::memcpy(&value, &slots_[slot], sizeof value);
    return value;
  }

  /// Asks for every cache line of feature j's record: the scatter writes the words the gather
  /// did not read.
  template <int Outputs>
  void prefetch(std::int64_t feature) const {
    const auto* record = reinterpret_cast<const char*>(&slots_[slot_of<Outputs>(feature)]);
    const auto bytes = static_cast<std::int64_t>(2 * sizeof(std::uint64_t)) * (Outputs > 0 ? Outputs : outputs_);
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

  /// Adds every word's sum to `sum` (entry (j, k) at k * features + j).
  void add_to(exact_sum& sum) const {
    std::int64_t* words = sum.word_data();
    for (std::int64_t j = 0; j < features_; ++j)
      for (std::int64_t k = 0; k < outputs_; ++k) {
        const auto packed = static_cast<std::int64_t>(slots_[slot_of(j) + static_cast<std::size_t>(outputs_ + k)]);
        const std::int64_t total = packed >> 8;  // arithmetic: the sign of the 56-bit sum
        add_words(&words[k * features_ + j], &total, 1);
      }
  }

private:
  std::int64_t features_;
  std::int64_t outputs_;
  int base_;
  std::vector<std::uint64_t> slots_;  // per feature: outputs coefficients, then outputs words
  std::array<double, max_grid_below + 1> steps_{};
};

/// The scores zt (outputs x m) of a chunk's rows: for row i, z_k = sum over its non-zeros (in
/// order) of x_ij coefficient(j, k), plus b_k. `prefetch(j)` asks for feature j's line a few
/// non-zeros ahead. `Outputs` is the output count when fixed at compile time (1), else 0.
template <int Outputs, class Coefficient, class Prefetch>
void scores_of(const sparse_view& x, const chunk& c, std::int64_t outputs_, const double* b,
               Eigen::MatrixXd& zt, Coefficient coefficient, Prefetch prefetch) {
  const std::int64_t outputs = Outputs > 0 ? Outputs : outputs_;
  zt.resize(outputs, c.count);
  const auto* starts = x.outerIndexPtr();
  const auto* index = x.innerIndexPtr();
  const auto* value = x.valuePtr();
  const auto last = static_cast<std::int32_t>(x.nonZeros());
  for (std::int64_t j = 0; j < c.count; ++j) {
    const auto row = c.row(j);
    double* z = zt.col(j).data();
    for (std::int64_t k = 0; k < outputs; ++k)
      z[k] = 0;
    for (auto p = starts[row]; p < starts[row + 1]; ++p) {
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

/// The scores of a chunk's rows from the coefficients in `rec` and the biases `b`.
template <int Outputs>
void gather(const sparse_view& x, const chunk& c, const records& rec, std::int64_t outputs,
            const double* b, Eigen::MatrixXd& zt) {
  scores_of<Outputs>(
    x, c, outputs, b, zt,
    [&](std::int32_t feature, std::int64_t k) {
      return rec.coefficient(rec.template slot_of<Outputs>(feature) + static_cast<std::size_t>(k));
    },
    [&](std::int32_t feature) { rec.template prefetch<Outputs>(feature); });
}

/// Adds the terms x_ij r_jk of a chunk's rows (rt: outputs x m) to the words in `rec`; returns the
/// largest |r_jk| 2^-e_k over the chunk, e_k being the grid of output k's bias (NaN for a
/// non-finite r).
template <int Outputs>
double scatter(const sparse_view& x, const chunk& c, const Eigen::MatrixXd& rt, records& rec,
               std::int64_t outputs_, const std::vector<int>& bias_grids, std::vector<double>& coarse_) {
  const std::int64_t outputs = Outputs > 0 ? Outputs : outputs_;
  const auto* starts = x.outerIndexPtr();
  const auto* index = x.innerIndexPtr();
  const auto* value = x.valuePtr();
  double most = 0;
  for (std::int64_t j = 0; j < c.count; ++j) {
    const auto row = c.row(j);
    const double* r = rt.col(j).data();
    for (std::int64_t k = 0; k < outputs; ++k) {
      const double units = scaled(std::fabs(r[k]), -bias_grids[static_cast<std::size_t>(k)]);
      if (!(units <= std::numeric_limits<double>::max()))
        return std::numeric_limits<double>::quiet_NaN();
      most = std::max(most, units);
    }
    double coarse[Outputs > 0 ? Outputs : 1];
    const double* rc = coarse;
    if (Outputs > 0) {
      coarse[0] = rec.coarse(r[0]);
    } else {
      coarse_.resize(static_cast<std::size_t>(outputs));
      for (std::int64_t k = 0; k < outputs; ++k)
        coarse_[static_cast<std::size_t>(k)] = rec.coarse(r[k]);
      rc = coarse_.data();
    }
    for (auto p = starts[row]; p < starts[row + 1]; ++p) {
      const double v = value[p];
      const auto slot = rec.template slot_of<Outputs>(index[p]) + static_cast<std::size_t>(outputs);
      if (Outputs == 1)
        rec.add(slot, v, rc[0]);
      else
        rec.add_outputs(slot, v, rc, outputs);
    }
  }
  return most;
}

/// An exact pass over a shard's blocks: for each chunk, the scores from `coefficients` (theta's,
/// or v's for a product), then `residual(block, chunk, zt, rt)` (which fills rt and returns the
/// chunk's loss sum), then the terms into `out`; each block's loss sum goes to `block_done(block,
/// loss)` and its biases' sums are rounded into `out` per block.
///
/// The weights' terms are bounded as block sums are (block_bounds.hpp): |x_ij| <= max_j and
/// |r_ik| <= delta_k, the bounds their grids and output k's bias grid come from, so every term is
/// at most twice |r_ik| in bias-grid units. That, times the rows per block (and 2^7: see
/// `packed_bits`), is what the pass reports as its largest deposit: a function of the rows alone,
/// like the terms.
template <class Residual, class BlockDone>
void exact_pass(const model_shape& shape, const dataset& data, const std::vector<row_range>& blocks,
                std::int64_t block_rows, const double* coefficients, exact_sum& out,
                Residual residual, BlockDone block_done) {
  const auto x = data.sparse();
  const auto outputs = shape.outputs;
  const auto weights = shape.weight_count();
  records rec{shape, coefficients, out};
  std::vector<int> bias_grids(static_cast<std::size_t>(outputs));
  for (std::int64_t k = 0; k < outputs; ++k)
    bias_grids[static_cast<std::size_t>(k)] = out.exponent(static_cast<std::size_t>(weights + k));
  Eigen::MatrixXd zt;
  Eigen::MatrixXd rt;
  Eigen::VectorXd bias_sums(outputs);
  std::vector<double> coarse;
  double most = 0;
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const row_selection rows = blocks[b];
    double loss = 0;
    bias_sums.setZero();
    for_each_chunk(rows, [&](const chunk& c) {
      if (outputs == 1)
        gather<1>(x, c, rec, outputs, coefficients + weights, zt);
      else
        gather<0>(x, c, rec, outputs, coefficients + weights, zt);
      rt.resize(zt.rows(), zt.cols());
      loss += residual(b, c, zt, rt);
      const double chunk_most = outputs == 1 ? scatter<1>(x, c, rt, rec, outputs, bias_grids, coarse)
                                             : scatter<0>(x, c, rt, rec, outputs, bias_grids, coarse);
      if (std::isnan(chunk_most) || (!std::isnan(most) && chunk_most > most))  // once NaN, NaN
        most = chunk_most;
      bias_sums += rt.rowwise().sum();
    }, fused_rows);
    out.deposit(static_cast<std::size_t>(weights), bias_sums);
    block_done(b, loss);
  }
  rec.add_to(out);
  out.note_units(std::ldexp(2 * most * static_cast<double>(std::max<std::int64_t>(block_rows, 1)),
                            fixed_bits - packed_bits));
}

} // namespace

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
  if (outputs_ == 1)
    scores_of<1>(x_, c, outputs_, b_.data(), zt, coefficient, prefetch);
  else
    scores_of<0>(x_, c, outputs_, b_.data(), zt, coefficient, prefetch);
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

void sparse_block_loss_grad(const model_shape& shape, const dataset& data,
                            const std::vector<row_range>& blocks, std::int64_t block_rows,
                            Eigen::Ref<const Eigen::VectorXd> theta, std::vector<double>& losses,
                            exact_sum& grad, std::vector<curvature>* keep) {
  Eigen::MatrixXd ct;
  Eigen::VectorXd y;
  losses.assign(blocks.size(), 0.0);
  if (keep) {
    keep->assign(blocks.size(), curvature{});
    const bool none = shape.kind == model_kind::linear;
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      (*keep)[b].rows = blocks[b].size();
      (*keep)[b].d.resize(none ? 0 : shape.kind == model_kind::logistic ? 1 : shape.outputs,
                          none ? 0 : blocks[b].size());
    }
  }
  exact_pass(shape, data, blocks, block_rows, theta.data(), grad,
             [&](std::size_t b, const chunk& c, const Eigen::MatrixXd& zt, Eigen::MatrixXd& rt) {
               gather_labels(data, c, y);
               const double loss = chunk_loss(shape.kind, zt, y, rt, keep ? &ct : nullptr);
               if (keep && ct.size() > 0)
                 (*keep)[b].d.middleCols(c.first, c.count) = ct;
               return loss;
             },
             [&](std::size_t b, double loss) { losses[b] = loss; });
}

void sparse_block_hessian_vector(const model_shape& shape, const dataset& data,
                                 const std::vector<row_range>& blocks, std::int64_t block_rows,
                                 const std::vector<curvature>& at,
                                 Eigen::Ref<const Eigen::VectorXd> v, exact_sum& hv) {
  Eigen::MatrixXd ct;
  exact_pass(shape, data, blocks, block_rows, v.data(), hv,
             [&](std::size_t b, const chunk& c, const Eigen::MatrixXd& ut, Eigen::MatrixXd& qt) {
               if (at[b].d.size() > 0)
                 ct = at[b].d.middleCols(c.first, c.count);
               chunk_curvature_product(shape.kind, ct, ut, qt);
               return 0.0;
             },
             [](std::size_t, double) {});
}

} // namespace shardopt::model::detail

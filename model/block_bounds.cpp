#include "model/block_bounds.hpp"

#include "model/exact_sum.hpp"
#include "base/parallel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace shardopt::model {

data_bounds bounds_of(const dataset& data, row_range rows, std::int64_t block_rows) {
  data_bounds out;
  out.block_rows = block_rows;
  out.blocks = block_count(rows.size(), block_rows);
  out.bits = data.is_sparse() ? packed_bits : fixed_bits;
  out.feature_max = Eigen::VectorXd::Zero(data.cols());
  if (rows.size() <= 0)
    return out;
  if (data.is_sparse()) {
    const auto x = data.sparse();
    const auto* index = x.innerIndexPtr();
    const auto* value = x.valuePtr();
    for (auto p = x.outerIndexPtr()[rows.begin]; p < x.outerIndexPtr()[rows.end]; ++p)
      out.feature_max[index[p]] = std::max(out.feature_max[index[p]], std::fabs(static_cast<double>(value[p])));
  } else {
    out.feature_max = data.dense().middleRows(rows.begin, rows.size()).cwiseAbs().colwise()
                        .maxCoeff().transpose().cast<double>();
  }
  out.max_label = data.y.segment(rows.begin, rows.size()).cwiseAbs().maxCoeff();
  out.max_row_norm = max_row_norm(data, rows);
  return out;
}

double max_row_norm(const dataset& data, row_range rows) {
  // Each row's squares added in its stored order (as sparse_layout adds them), so the same
  // doubles whichever process or part computes them; a NaN value is skipped, as feature_max skips
  // it, so that the norm is never below a row's largest |value|.
  double most = 0;
  const auto square = [](float v) { return std::isnan(v) ? 0.0 : static_cast<double>(v) * static_cast<double>(v); };
  if (data.is_sparse()) {
    const auto x = data.sparse();
    const auto* starts = x.outerIndexPtr();
    const auto* value = x.valuePtr();
    for (auto i = rows.begin; i < rows.end; ++i) {
      double squares = 0;
      for (auto p = starts[i]; p < starts[i + 1]; ++p)
        squares += square(value[p]);
      most = std::max(most, squares);
    }
  } else {
    const auto x = data.dense();
    for (auto i = rows.begin; i < rows.end; ++i) {
      double squares = 0;
      for (Eigen::Index j = 0; j < x.cols(); ++j)
        squares += square(x(i, j));
      most = std::max(most, squares);
    }
  }
  return std::sqrt(most);
}

data_bounds& operator+=(data_bounds& a, const data_bounds& b) {
  if (a.feature_max.size() == 0)
    a.feature_max = b.feature_max;
  else if (b.feature_max.size() == a.feature_max.size())
    a.feature_max = a.feature_max.cwiseMax(b.feature_max);
  a.max_label = std::max(a.max_label, b.max_label);
  a.max_row_norm = std::max(a.max_row_norm, b.max_row_norm);
  a.blocks += b.blocks;
  a.bits = std::min(a.bits, b.bits);
  return a;
}

namespace {

/// Slack for the rounding of the bounds' own arithmetic.
constexpr double slack = 2.0;

using matrix_map = Eigen::Map<const Eigen::MatrixXd>;

matrix_map weights_of(Eigen::Ref<const Eigen::VectorXd> theta, const layer_span& layer) {
  return {theta.data() + layer.weights, layer.in, layer.out};
}

/// Per unit a layer feeds: the bound on its score given bounds on the layer's inputs.
Eigen::VectorXd forward(Eigen::Ref<const Eigen::VectorXd> theta, const layer_span& layer,
                        const Eigen::VectorXd& inputs) {
  return weights_of(theta, layer).cwiseAbs().transpose() * inputs
         + theta.segment(layer.biases, layer.out).cwiseAbs();
}

/// Writes the grids of a layer's entries: weight (in, out) bounded by rows * inputs[in] *
/// deltas[out], bias out by rows * deltas[out].
void layer_grids(const layer_span& layer, const Eigen::VectorXd& inputs, const Eigen::VectorXd& deltas,
                 const data_bounds& bounds, std::vector<int>& grids) {
  const double rows = slack * static_cast<double>(bounds.block_rows);
  for (Eigen::Index o = 0; o < layer.out; ++o) {
    for (Eigen::Index i = 0; i < layer.in; ++i)
      grids[static_cast<std::size_t>(layer.weights + o * layer.in + i)] =
        grid_exponent(rows * inputs[i] * deltas[o], bounds.blocks, bounds.bits);
    grids[static_cast<std::size_t>(layer.biases + o)] = grid_exponent(rows * deltas[o], bounds.blocks, bounds.bits);
  }
}

/// The features' maxima, or zeros when the bounds know none (no rows).
Eigen::VectorXd features_of(const model_shape& shape, const data_bounds& bounds) {
  if (bounds.feature_max.size() == shape.features)
    return bounds.feature_max;
  return Eigen::VectorXd::Zero(shape.features);
}

/// The largest curvature of a loss in one score: what bounds a Hessian diagonal's terms.
double curvature_bound(model_kind kind) {
  switch (kind) {  // every kind listed, so that -Wswitch names a new one
    case model_kind::linear:
      return 1.0;
    case model_kind::svm:
      return 2.0;
    case model_kind::logistic:
    case model_kind::softmax:
      return 0.25;  // s (1 - s) and p (1 - p)
  }
  return 2.0;  // not a kind: the largest
}

} // namespace

std::vector<int> gradient_grid(const model_shape& shape, const data_bounds& bounds,
                               Eigen::Ref<const Eigen::VectorXd> theta) {
  const auto layers = shape.layers();
  std::vector<Eigen::VectorXd> inputs{features_of(shape, bounds)};
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    Eigen::VectorXd pre = forward(theta, layers[l], inputs.back());
    if (shape.act == activation::tanh)
      pre = pre.cwiseMin(1.0);
    inputs.push_back(std::move(pre));
  }
  const Eigen::VectorXd z = forward(theta, layers.back(), inputs.back());
  Eigen::VectorXd delta = Eigen::VectorXd::Ones(z.size());  // logistic, softmax
  if (shape.kind == model_kind::linear)
    delta = z.array() + bounds.max_label;
  else if (shape.kind == model_kind::svm)
    delta = 2.0 * (1.0 + z.array());
  std::vector<int> grids(static_cast<std::size_t>(shape.dimension()), highest_grid);
  for (std::size_t l = layers.size(); l-- > 0;) {
    layer_grids(layers[l], inputs[l], delta, bounds, grids);
    if (l > 0)
      delta = weights_of(theta, layers[l]).cwiseAbs() * delta;
  }
  return grids;
}

std::vector<int> hessian_vector_grid(const model_shape& shape, const data_bounds& bounds,
                                     Eigen::Ref<const Eigen::VectorXd> v) {
  const auto layer = shape.layers().back();
  const Eigen::VectorXd features = features_of(shape, bounds);
  const Eigen::VectorXd u = forward(v, layer, features);
  Eigen::VectorXd q;
  if (shape.kind == model_kind::softmax)
    q = Eigen::VectorXd::Constant(u.size(), 2.0 * u.maxCoeff());
  else
    q = curvature_bound(shape.kind) * u;
  std::vector<int> grids(static_cast<std::size_t>(shape.dimension()), highest_grid);
  layer_grids(layer, features, q, bounds, grids);
  return grids;
}

namespace {

/// floor(log2 x) for x > 0 (x below the smallest normal double counts as it, above the largest
/// as it).
int binade(double x) {
  x = std::clamp(x, std::numeric_limits<double>::min(), std::numeric_limits<double>::max());
  std::uint64_t pattern;
  std::memcpy(&pattern, &x, sizeof pattern);
  return static_cast<int>((pattern >> 52) & 0x7ff) - 1023;
}

/// The largest bound on a linear model's score over its outputs, for theta or v: max_k (|b_k| +
/// min(sum_j |W_jk| max_j, R ||W_k||_2)), R the rows' largest norm. Both terms bound |x . W_k| for
/// every row x (the second by Cauchy-Schwarz); the first sums over the whole dimension, so that
/// for wide sparse data (2^24 features, 20 a row) the second is smaller by about 2^9, and grids
/// planned from it keep that many more bits of a product. Two passes over theta, nothing
/// allocated (a request plans its grid with it).
double score_bound(const model_shape& shape, const data_bounds& bounds, Eigen::Ref<const Eigen::VectorXd> theta) {
  const bool known = bounds.feature_max.size() == shape.features;
  double most = 0;
  for (std::int64_t k = 0; k < shape.outputs; ++k) {
    double z = std::fabs(theta[shape.weight_count() + k]);
    if (known) {
      const auto w = theta.segment(k * shape.features, shape.features);
      double sum = w.cwiseAbs().dot(bounds.feature_max);
      const double norm_bound = bounds.max_row_norm * w.norm();
      // The sum stands when the norm is NaN, or 0 because every square underflowed
      if (norm_bound > 0 && norm_bound < sum)
        sum = norm_bound;
      z += sum;
    }
    most = std::max(most, z);
  }
  return most;
}

} // namespace

grid_plan::grid_plan(const model_shape& shape, data_bounds kept, unsigned threads)
  : shape_(shape), bounds_(std::move(kept)) {
  const auto& bounds = bounds_;
  if (shape.is_network())
    return;
  // Per entry: a power of two above slack x rows per block x the entry's largest |feature| (1 for
  // a bias), squared for the diagonal's entries. The table holds each entry's distance below the
  // largest of them, which the largest feature gives (binade is monotone): one pass, no
  // dimension-sized vector of parts beside the table.
  const double rows = slack * static_cast<double>(bounds.block_rows);
  const bool known = bounds.feature_max.size() == shape.features;
  const double largest = known && shape.features > 0 ? bounds.feature_max.maxCoeff() : 0.0;
  const int bias_part = binade(rows) + 1;
  top_ = std::max({binade(rows * largest) + 1, binade(rows * largest * largest) + 1, bias_part});
  const auto dimension = static_cast<std::size_t>(shape.dimension());
  const auto weights = static_cast<std::size_t>(shape.weight_count());
  auto table = std::make_shared<std::vector<std::uint8_t>>(2 * dimension);
  auto& below = *table;
  const auto distance = [this](int part) {
    return static_cast<std::uint8_t>(std::min(top_ - part, max_grid_below));
  };
  // Features in ranges, each range's entries written by one thread.
  const auto parts = 8 * static_cast<std::int64_t>(std::max(threads, 1U));
  const auto range = std::max<std::int64_t>(1 << 12, (shape.features + parts - 1) / parts);
  run_parallel(static_cast<std::size_t>((shape.features + range - 1) / range), threads, [&](std::size_t r) {
    const auto first = static_cast<std::int64_t>(r) * range;
    for (std::int64_t j = first; j < std::min(first + range, shape.features); ++j) {
      const double feature = known ? bounds.feature_max[j] : 0.0;
      const auto linear = distance(binade(rows * feature) + 1);
      const auto square = distance(binade(rows * feature * feature) + 1);
      for (std::int64_t k = 0; k < shape.outputs; ++k) {
        const auto entry = static_cast<std::size_t>(k * shape.features + j);
        below[entry] = linear;
        below[dimension + entry] = square;
      }
    }
  });
  for (std::size_t b = weights; b < dimension; ++b)
    below[b] = below[dimension + b] = distance(bias_part);
  table_ = std::move(table);
}

namespace {

/// The grid whose entry i is the table's part plus `request` (base clamped to the grids there are).
grid planned(const std::shared_ptr<const std::vector<std::uint8_t>>& table, int top, int request,
             std::size_t entries) {
  return grid{std::clamp(top + request, lowest_grid, highest_grid), table, entries};
}

} // namespace

grid grid_plan::gradient(Eigen::Ref<const Eigen::VectorXd> theta, bool diagonal) const {
  if (!table_)
    return make_grid(gradient_grid(shape_, bounds_, theta));
  // The loss's slope in its scores: 1 for logistic and softmax; |z| + |y| for least squares and
  // 2 (1 + |z|) for the squared hinge, with |z| bounded by `score_bound`.
  double slope = 1.0;
  if (shape_.kind == model_kind::linear || shape_.kind == model_kind::svm) {
    const double z = score_bound(shape_, bounds_, theta);
    slope = shape_.kind == model_kind::linear ? z + bounds_.max_label : 2.0 * (1.0 + z);
  }
  const auto blocks = static_cast<double>(std::max<std::int64_t>(bounds_.blocks, 1));
  int request = binade(slope * blocks) + 1 - bounds_.bits;
  if (diagonal)  // the diagonal's terms: the curvature's bound in place of the slope
    request = std::max(request, binade(curvature_bound(shape_.kind) * blocks) + 1 - bounds_.bits);
  const auto dimension = static_cast<std::size_t>(shape_.dimension());
  return planned(table_, top_, request, diagonal ? 2 * dimension : dimension);
}

grid grid_plan::hessian_vector(Eigen::Ref<const Eigen::VectorXd> v) const {
  if (!table_)
    return make_grid(hessian_vector_grid(shape_, bounds_, v));
  const double u = score_bound(shape_, bounds_, v);
  // Softmax's product is at most twice the largest change of a score (`hessian_vector_grid`).
  const double q = (shape_.kind == model_kind::softmax ? 2.0 : curvature_bound(shape_.kind)) * u;
  const auto blocks = static_cast<double>(std::max<std::int64_t>(bounds_.blocks, 1));
  return planned(table_, top_, binade(q * blocks) + 1 - bounds_.bits,
                 static_cast<std::size_t>(shape_.dimension()));
}

grid grid_plan::coarser(grid g, int shift) {
  g.base = std::min(g.base + shift, highest_grid);
  return g;
}

} // namespace shardopt::model

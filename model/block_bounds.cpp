#include "model/block_bounds.hpp"

#include "model/exact_sum.hpp"

#include <algorithm>
#include <cmath>

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
  return out;
}

data_bounds& operator+=(data_bounds& a, const data_bounds& b) {
  if (a.feature_max.size() == 0)
    a.feature_max = b.feature_max;
  else if (b.feature_max.size() == a.feature_max.size())
    a.feature_max = a.feature_max.cwiseMax(b.feature_max);
  a.max_label = std::max(a.max_label, b.max_label);
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
    q = (shape.kind == model_kind::logistic ? 0.25 : shape.kind == model_kind::linear ? 1.0 : 2.0) * u;
  std::vector<int> grids(static_cast<std::size_t>(shape.dimension()), highest_grid);
  layer_grids(layer, features, q, bounds, grids);
  return grids;
}

} // namespace shardopt::model

#include "model/block_bounds.hpp"

#include "model/exact_sum.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardopt::model {

data_bounds bounds_of(const dataset& data, row_range rows, std::int64_t block_rows) {
  data_bounds out;
  out.block_rows = block_rows;
  out.blocks = block_count(rows.size(), out.block_rows);
  if (rows.size() <= 0)
    return out;
  if (data.is_sparse()) {
    const auto& x = data.sparse();
    for (auto row = rows.begin; row < rows.end; ++row)
      for (sparse_features::InnerIterator it(x, row); it; ++it)
        out.max_feature = std::max(out.max_feature, std::fabs(static_cast<double>(it.value())));
  } else {
    out.max_feature = static_cast<double>(data.dense().middleRows(rows.begin, rows.size()).cwiseAbs().maxCoeff());
  }
  out.max_label = data.y.segment(rows.begin, rows.size()).cwiseAbs().maxCoeff();
  return out;
}

data_bounds& operator+=(data_bounds& a, const data_bounds& b) {
  a.max_feature = std::max(a.max_feature, b.max_feature);
  a.max_label = std::max(a.max_label, b.max_label);
  a.blocks += b.blocks;
  return a;
}

namespace {

/// The largest absolute column sum of a layer's weights (one column per unit it feeds) plus that
/// unit's |bias|: scores are at most this times the largest input.
double forward_gain(Eigen::Ref<const Eigen::VectorXd> theta, const layer_span& layer, double input) {
  const Eigen::Map<const Eigen::MatrixXd> w(theta.data() + layer.weights, layer.in, layer.out);
  const auto b = theta.segment(layer.biases, layer.out);
  double most = 0;
  for (Eigen::Index o = 0; o < layer.out; ++o)
    most = std::max(most, w.col(o).cwiseAbs().sum() * input + std::fabs(b[o]));
  return most;
}

/// The largest absolute row sum of a layer's weights: a delta below is at most this times the
/// largest delta above.
double backward_gain(Eigen::Ref<const Eigen::VectorXd> theta, const layer_span& layer) {
  const Eigen::Map<const Eigen::MatrixXd> w(theta.data() + layer.weights, layer.in, layer.out);
  return layer.in == 0 ? 0.0 : w.cwiseAbs().rowwise().sum().maxCoeff();
}

/// Slack for the rounding of the bounds' own arithmetic.
constexpr double slack = 2.0;

} // namespace

double gradient_bound(const model_shape& shape, const data_bounds& bounds,
                      Eigen::Ref<const Eigen::VectorXd> theta) {
  const auto layers = shape.layers();
  std::vector<double> inputs{bounds.max_feature};  // largest |input| of each layer
  for (std::size_t l = 0; l + 1 < layers.size(); ++l) {
    const double pre = forward_gain(theta, layers[l], inputs.back());
    inputs.push_back(shape.act == activation::tanh ? std::min(1.0, pre) : pre);
  }
  const double z = forward_gain(theta, layers.back(), inputs.back());
  double delta = 1.0;  // logistic, softmax
  if (shape.kind == model_kind::linear)
    delta = z + bounds.max_label;
  else if (shape.kind == model_kind::svm)
    delta = 2.0 * (1.0 + z);
  double most = 0;
  for (std::size_t l = layers.size(); l-- > 0;) {
    most = std::max(most, std::max(inputs[l], 1.0) * delta);
    if (l > 0)
      delta *= backward_gain(theta, layers[l]);
  }
  const double bound = slack * static_cast<double>(bounds.block_rows) * most;
  return std::isnan(bound) ? std::numeric_limits<double>::infinity() : bound;
}

double hessian_vector_bound(const model_shape& shape, const data_bounds& bounds,
                            Eigen::Ref<const Eigen::VectorXd> v) {
  const auto layer = shape.layers().back();
  const double u = forward_gain(v, layer, bounds.max_feature);
  const double curvature = shape.kind == model_kind::logistic ? 0.25
                           : shape.kind == model_kind::linear ? 1.0
                                                              : 2.0;
  const double bound = slack * static_cast<double>(bounds.block_rows) * curvature * u
                       * std::max(bounds.max_feature, 1.0);
  return std::isnan(bound) ? std::numeric_limits<double>::infinity() : bound;
}

int grid_for(double bound, std::int64_t blocks) {
  if (!(bound <= std::numeric_limits<double>::max()))
    return std::numeric_limits<double>::max_exponent - fixed_bits;
  return std::clamp(grid_exponent(bound, blocks), std::numeric_limits<double>::min_exponent - 60,
                    std::numeric_limits<double>::max_exponent - fixed_bits);
}

} // namespace shardopt::model

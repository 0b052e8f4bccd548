#include "model/linear_model.hpp"

#include "model/dense_kernels.hpp"
#include "model/kernels.hpp"
#include "model/sparse_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace shardopt::model {

namespace {

using detail::chunk;
using detail::dense_products;
using detail::for_each_chunk;
using detail::gather_labels;
using detail::sparse_products;

/// Calls f(products) with the products of `data`'s layout over `theta` (or a direction v).
template <class F>
decltype(auto) with_products(const model_shape& shape, const dataset& data,
                             Eigen::Ref<const Eigen::VectorXd> theta, F&& f) {
  if (data.is_sparse()) {
    sparse_products products{shape, data, theta};
    return f(products);
  }
  dense_products products{shape, data, theta};
  return f(products);
}

/// The forward half of an evaluation, chunk by chunk: scores, labels, the losses and residuals
/// (and, with `keep`, each example's curvature stored there), then `then(chunk, rt)` with the
/// chunk's residuals while its features are in cache. Returns the loss sum.
template <class Products, class Then>
double loss_chunks(const model_shape& shape, const dataset& data, const row_selection& rows,
                   Products& products, curvature* keep, Then then) {
  Eigen::MatrixXd zt;
  Eigen::MatrixXd rt;
  Eigen::MatrixXd ct;
  Eigen::VectorXd y;
  if (keep) {
    const bool none = shape.kind == model_kind::linear;
    keep->rows = detail::selection_size(rows);
    keep->d.resize(none ? 0 : shape.kind == model_kind::logistic ? 1 : shape.outputs, none ? 0 : keep->rows);
  }
  double loss = 0;
  for_each_chunk(rows, [&](const chunk& c) {
    products.forward(c, zt);
    gather_labels(data, c, y);
    rt.resize(zt.rows(), zt.cols());
    loss += detail::chunk_loss(shape.kind, zt, y, rt, keep ? &ct : nullptr);
    if (keep && ct.size() > 0)
      keep->d.middleCols(c.first, c.count) = ct;
    then(c, rt);
  });
  return loss;
}

/// The curvature product of a chunk: the scores' change ut along v times each example's curvature.
template <class Products, class Each>
void product_chunks(const model_shape& shape, const row_selection& rows, const curvature& at,
                    Products& products, Each each) {
  Eigen::MatrixXd ut;
  Eigen::MatrixXd qt;
  Eigen::MatrixXd ct;
  for_each_chunk(rows, [&](const chunk& c) {
    products.forward(c, ut);
    if (at.d.size() > 0)
      ct = at.d.middleCols(c.first, c.count);
    detail::chunk_curvature_product(shape.kind, ct, ut, qt);
    each(c, qt);
  });
}

/// X^T R summed in double into a gradient-shaped vector, which it zeroes first.
class plain_sums {
public:
  plain_sums(const model_shape& shape, Eigen::Ref<Eigen::VectorXd> out)
    : grad_w_(out.data(), shape.features, shape.outputs),
      grad_b_(out.data() + shape.weight_count(), shape.outputs) {
    out.setZero();
  }

  void add(dense_products& products, const chunk&, const Eigen::MatrixXd& rt) {
    products.backward(rt, grad_w_, grad_b_);
  }

  void add(const sparse_products& products, const chunk& c, const Eigen::MatrixXd& rt) {
    // Sparse rows scatter into W's rows: for one output the vector itself, else a row-major copy.
    if (grad_w_.cols() > 1 && rows_.size() == 0)
      rows_ = row_major::Zero(grad_w_.rows(), grad_w_.cols());
    products.backward(c, rt, grad_w_.cols() > 1 ? rows_.data() : grad_w_.data(), grad_b_);
  }

  void finish() {
    if (rows_.size() > 0)
      grad_w_ += rows_;
  }

private:
  using row_major = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

  Eigen::Map<Eigen::MatrixXd> grad_w_;
  Eigen::Map<Eigen::VectorXd> grad_b_;
  row_major rows_;
};

} // namespace

double loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                     Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum,
                     curvature* keep) {
  if (shape.is_network())
    return detail::network_loss_grad_sum(shape, data, rows, theta, grad_sum);
  return with_products(shape, data, theta, [&](auto& products) {
    plain_sums sums{shape, grad_sum};
    const double loss = loss_chunks(shape, data, rows, products, keep,
                                    [&](const chunk& c, const Eigen::MatrixXd& rt) { sums.add(products, c, rt); });
    sums.finish();
    return loss;
  });
}

curvature curvature_at(const model_shape& shape, const dataset& data, const row_selection& rows,
                       Eigen::Ref<const Eigen::VectorXd> theta) {
  curvature out;
  out.rows = detail::selection_size(rows);
  if (shape.kind == model_kind::linear)
    return out;  // nothing to keep: no pass needed
  with_products(shape, data, theta, [&](auto& products) {
    loss_chunks(shape, data, rows, products, &out, [](const chunk&, const Eigen::MatrixXd&) {});
  });
  return out;
}

void hessian_vector_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                        const curvature& at, Eigen::Ref<const Eigen::VectorXd> v,
                        Eigen::Ref<Eigen::VectorXd> hv_sum) {
  // The products of a "theta" equal to v give u = V^T x + v_b, the change of the scores along v.
  with_products(shape, data, v, [&](auto& products) {
    plain_sums sums{shape, hv_sum};
    product_chunks(shape, rows, at, products,
                   [&](const chunk& c, const Eigen::MatrixXd& qt) { sums.add(products, c, qt); });
    sums.finish();
  });
}

void finish_hessian_vector(const model_shape& shape, double lambda, std::int64_t count,
                           Eigen::Ref<const Eigen::VectorXd> v, Eigen::Ref<Eigen::VectorXd> hv) {
  hv *= 1.0 / static_cast<double>(count);
  for (const auto& layer : shape.layers())
    hv.segment(layer.weights, layer.in * layer.out) += lambda * v.segment(layer.weights, layer.in * layer.out);
}

double finish_part(const model_shape& shape, const exact_sum& sums, Eigen::Ref<Eigen::VectorXd> out,
                   Eigen::Index first, Eigen::Index begin, Eigen::Index end, double lambda,
                   std::int64_t count, const Eigen::VectorXd* weights) {
  sums.to_doubles(out, first + begin, first + end, first);
  auto part = out.segment(begin, end - begin);
  part *= 1.0 / static_cast<double>(count);
  const auto last = std::min<Eigen::Index>(end, shape.weight_count());
  if (begin >= last)
    return 0.0;
  auto regularised = out.segment(begin, last - begin);
  if (!weights) {
    regularised.array() += lambda;
    return 0.0;
  }
  const auto w = weights->segment(begin, last - begin);
  regularised += lambda * w;
  return w.squaredNorm();
}

double finish_linear(const model_shape& shape, const exact_sum& sums, Eigen::Ref<Eigen::VectorXd> out,
                     Eigen::Index first, double lambda, std::int64_t count, const Eigen::VectorXd* weights) {
  double squared = 0;
  for (Eigen::Index begin = 0; begin < out.size(); begin += vector_chunk)
    squared += finish_part(shape, sums, out, first, begin, std::min(out.size(), begin + vector_chunk), lambda,
                           count, weights);
  return squared;
}

void finish_diagonal(const model_shape& shape, double lambda, std::int64_t count, Eigen::Ref<Eigen::VectorXd> d) {
  d *= 1.0 / static_cast<double>(count);
  for (const auto& layer : shape.layers())
    d.segment(layer.weights, layer.in * layer.out).array() += lambda;
}

line_penalty line_terms(const model_shape& shape, Eigen::Ref<const Eigen::VectorXd> theta_a,
                        Eigen::Ref<const Eigen::VectorXd> theta_b) {
  line_penalty out;
  for (const auto& layer : shape.layers())  // entry by entry: nothing of the dimension's size allocated
    for (auto i = layer.weights; i < layer.weights + layer.in * layer.out; ++i) {
      const double a = theta_a[i];
      const double d = theta_b[i] - a;
      out.aa += a * a;
      out.ad += a * d;
      out.dd += d * d;
    }
  return out;
}

double finish_objective(const model_shape& shape, double lambda, std::int64_t count, double loss_sum,
                        Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad) {
  const double inv_n = 1.0 / static_cast<double>(count);
  grad *= inv_n;
  double squared_weights = 0;
  for (const auto& layer : shape.layers()) {
    const auto weights = theta.segment(layer.weights, layer.in * layer.out);
    grad.segment(layer.weights, layer.in * layer.out) += lambda * weights;
    squared_weights += weights.squaredNorm();
  }
  return loss_sum * inv_n + 0.5 * lambda * squared_weights;
}

Eigen::MatrixXd scores(const model_shape& shape, const dataset& data, row_range rows,
                       Eigen::Ref<const Eigen::VectorXd> theta) {
  Eigen::MatrixXd z(rows.size(), shape.outputs);
  if (shape.is_network()) {
    detail::network_scores(shape, data, rows, theta, z);
    return z;
  }
  with_products(shape, data, theta, [&](auto& products) {
    Eigen::MatrixXd zt;
    const row_selection selection = rows;
    for_each_chunk(selection, [&](const chunk& c) {
      products.forward(c, zt);
      z.middleRows(c.first, c.count) = zt.transpose();
    });
  });
  return z;
}

std::optional<std::int64_t> first_invalid_label(const model_shape& shape, const Eigen::VectorXd& labels) {
  for (Eigen::Index i = 0; i < labels.size(); ++i) {
    const double y = labels[i];
    bool valid = std::isfinite(y);
    if (valid && shape.kind != model_kind::linear) {
      if (shape.outputs == 1)
        valid = y == 1.0 || y == -1.0;
      else
        valid = y >= 0 && y < static_cast<double>(shape.outputs) && y == std::floor(y);
    }
    if (!valid)
      return i;
  }
  return std::nullopt;
}

quality_sums quality(const model_shape& shape, const dataset& data, row_range rows,
                     Eigen::Ref<const Eigen::VectorXd> theta) {
  quality_sums sums;
  const Eigen::MatrixXd z = scores(shape, data, rows, theta);
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const double label = data.y(rows.begin + i);
    if (shape.kind == model_kind::linear) {
      const double d = z(i, 0) - label;
      sums.squared_error += d * d;
    } else if (shape.outputs == 1) {
      sums.correct += ((z(i, 0) >= 0 ? 1.0 : -1.0) == label) ? 1 : 0;
    } else {
      Eigen::Index best = 0;
      z.row(i).maxCoeff(&best);
      sums.correct += (static_cast<double>(best) == label) ? 1 : 0;
    }
  }
  sums.count = rows.size();
  return sums;
}

} // namespace shardopt::model

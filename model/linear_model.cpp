#include "model/linear_model.hpp"
#include "model/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace shardopt::model {

namespace {

using detail::chunk;
using detail::for_each_chunk;
using detail::gather_labels;

using row_major_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Forward and backward products for one chunk, dense or sparse. Holds the chunk's double copy of
/// the dense features so both products reuse it while it is in cache.
class chunk_products {
public:
  chunk_products(const model_shape& shape, const dataset& data,
                 Eigen::Ref<const Eigen::VectorXd> theta)
    : data_(data),
      w_(theta.data(), shape.features, shape.outputs),
      b_(theta.data() + shape.weight_count(), shape.outputs) {
    // Sparse data reads W by rows (one axpy per non-zero): a row-major copy, except for one
    // output, where W's column is already that layout.
    if (data.is_sparse() && shape.outputs > 1)
      w_copy_ = w_;
  }

  /// zt (outputs x m) = scores of the chunk's rows.
  void forward(const chunk& c, Eigen::MatrixXd& zt) {
    zt.resize(w_.cols(), c.count);
    if (!data_.is_sparse()) {
      const auto& x = data_.dense();
      if (std::holds_alternative<row_range>(*c.rows)) {
        x_chunk_ = x.middleRows(c.row(0), c.count).cast<double>();
      } else {
        x_chunk_.resize(c.count, x.cols());
        for (std::int64_t j = 0; j < c.count; ++j)
          x_chunk_.row(j) = x.row(c.row(j)).cast<double>();
      }
      zt.noalias() = w_.transpose() * x_chunk_.transpose();
    } else {
      const auto& x = data_.sparse();
      const Eigen::Map<const row_major_matrix> w_rows(w_copy_.size() > 0 ? w_copy_.data() : w_.data(),
                                                      w_.rows(), w_.cols());
      zt.setZero();
      for (std::int64_t j = 0; j < c.count; ++j)
        for (sparse_features::InnerIterator it(x, c.row(j)); it; ++it)
          zt.col(j) += static_cast<double>(it.value()) * w_rows.row(it.index()).transpose();
    }
    zt.colwise() += b_;
  }

  /// Adds the chunk's gradient contribution X_chunk^T R to grad_w (features x outputs, row-major for
  /// sparse data, see `finish`) and the column sums of R to grad_b.
  void backward(const chunk& c, const Eigen::MatrixXd& rt, Eigen::Ref<Eigen::MatrixXd> grad_w,
                Eigen::Ref<Eigen::VectorXd> grad_b) {
    if (!data_.is_sparse()) {
      grad_w.noalias() += x_chunk_.transpose() * rt.transpose();
    } else {
      if (grad_rows_.size() == 0)
        grad_rows_ = row_major_matrix::Zero(w_.rows(), w_.cols());
      const auto& x = data_.sparse();
      for (std::int64_t j = 0; j < c.count; ++j)
        for (sparse_features::InnerIterator it(x, c.row(j)); it; ++it)
          grad_rows_.row(it.index()) += static_cast<double>(it.value()) * rt.col(j).transpose();
    }
    grad_b += rt.rowwise().sum();
  }

  /// Sparse data: rounds the accumulated gradient rows of the features in `touched` into `out`
  /// (feature j, output k at entry k * features + j) and clears them.
  void deposit_rows(const std::vector<std::int32_t>& touched, exact_sum& out) {
    if (grad_rows_.size() == 0)
      return;
    const auto features = static_cast<std::size_t>(grad_rows_.rows());
    for (const auto j : touched)
      for (Eigen::Index k = 0; k < grad_rows_.cols(); ++k) {
        out.deposit(static_cast<std::size_t>(k) * features + static_cast<std::size_t>(j),
                    grad_rows_(j, k));
        grad_rows_(j, k) = 0;
      }
  }

  /// Folds the sparse path's row-major accumulator into grad_w.
  void finish(Eigen::Ref<Eigen::MatrixXd> grad_w) {
    if (grad_rows_.size() != 0)
      grad_w += grad_rows_;
  }

private:
  const dataset& data_;
  Eigen::Map<const Eigen::MatrixXd> w_;
  Eigen::Map<const Eigen::VectorXd> b_;
  row_major_matrix w_copy_;     // sparse data, several outputs: W row-major
  row_major_matrix grad_rows_;  // sparse data: the gradient of W, row-major
  row_major_matrix x_chunk_;
};

/// The forward half of an evaluation, chunk by chunk: scores, labels, the losses and residuals
/// (and, with `keep`, each example's curvature stored there), then `then(chunk, rt)` with the
/// chunk's residuals while its features are in cache. Returns the loss sum.
template <class Then>
double loss_chunks(const model_shape& shape, const dataset& data, const row_selection& rows,
                   chunk_products& products, curvature* keep, Then then) {
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

/// The features that a block's rows touch (sparse data), each once, in first-seen order.
class touched_features {
public:
  explicit touched_features(std::int64_t features) : seen_(static_cast<std::size_t>(features), 0) {}

  const std::vector<std::int32_t>& of(const sparse_features& x, row_range block) {
    list_.clear();
    for (auto row = block.begin; row < block.end; ++row)
      for (sparse_features::InnerIterator it(x, row); it; ++it)
        if (!seen_[static_cast<std::size_t>(it.index())]) {
          seen_[static_cast<std::size_t>(it.index())] = 1;
          list_.push_back(it.index());
        }
    for (const auto j : list_)
      seen_[static_cast<std::size_t>(j)] = 0;
    return list_;
  }

private:
  std::vector<char> seen_;
  std::vector<std::int32_t> list_;
};

/// Runs `each(k, grad_w, grad_b)` for every block k, accumulating its gradient-shaped sums there,
/// then rounds them into `out` and clears them: every entry for dense data, the touched features'
/// rows (kept by `products`) and the biases for sparse data.
template <class Each>
void per_block(const model_shape& shape, const dataset& data, const std::vector<row_range>& blocks,
               chunk_products& products, exact_sum& out, Each each) {
  const auto weights = shape.weight_count();
  // Sparse data accumulates W's gradient in `products` (by rows): here only the biases.
  const bool sparse = data.is_sparse();
  Eigen::VectorXd sums = Eigen::VectorXd::Zero(sparse ? shape.outputs : shape.dimension());
  Eigen::Map<Eigen::MatrixXd> grad_w(sums.data(), sparse ? 0 : shape.features, shape.outputs);
  Eigen::Map<Eigen::VectorXd> grad_b(sums.data() + (sparse ? 0 : weights), shape.outputs);
  touched_features touched{sparse ? shape.features : 0};
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    each(k, grad_w, grad_b);
    if (sparse) {
      products.deposit_rows(touched.of(data.sparse(), blocks[k]), out);
    } else {
      out.deposit(0, sums.head(weights));
      grad_w.setZero();
    }
    out.deposit(static_cast<std::size_t>(weights), grad_b);
    grad_b.setZero();
  }
}

} // namespace

std::string_view to_string(model_kind kind) {
  switch (kind) {
    case model_kind::linear:
      return "linear";
    case model_kind::logistic:
      return "logistic";
    case model_kind::softmax:
      return "softmax";
    case model_kind::svm:
      return "svm";
  }
  return "unknown";
}

std::optional<model_kind> parse_model_kind(std::string_view name) {
  for (auto kind : {model_kind::linear, model_kind::logistic, model_kind::softmax, model_kind::svm})
    if (to_string(kind) == name)
      return kind;
  return std::nullopt;
}

bool is_classifier(model_kind kind) {
  return kind != model_kind::linear;
}

std::string_view to_string(activation act) {
  return act == activation::relu ? "relu" : "tanh";
}

std::optional<activation> parse_activation(std::string_view name) {
  for (auto act : {activation::relu, activation::tanh})
    if (to_string(act) == name)
      return act;
  return std::nullopt;
}

std::vector<layer_span> model_shape::layers() const {
  std::vector<layer_span> out;
  std::int64_t in = features;
  std::int64_t at = 0;
  for (std::size_t l = 0; l <= hidden.size(); ++l) {
    const std::int64_t width = l < hidden.size() ? hidden[l] : outputs;
    out.push_back({in, width, at, at + in * width});
    at += in * width + width;
    in = width;
  }
  return out;
}

std::int64_t model_shape::weight_count() const {
  std::int64_t count = 0;
  for (const auto& layer : layers())
    count += layer.in * layer.out;
  return count;
}

std::int64_t model_shape::dimension() const {
  const auto all = layers();
  return all.back().biases + all.back().out;
}

std::string describe(const model_shape& shape) {
  if (!shape.is_network())
    return std::string{to_string(shape.kind)} + ", " + std::to_string(shape.features) + " features x " +
           std::to_string(shape.outputs) + " outputs";
  std::string widths = std::to_string(shape.features);
  for (const auto width : shape.hidden)
    widths += "-" + std::to_string(width);
  widths += "-" + std::to_string(shape.outputs);
  return "mlp " + widths + " (" + std::string{to_string(shape.act)} + ", " +
         std::string{to_string(shape.kind)} + " output)";
}

std::string check_architecture(const model_shape& shape) {
  if (shape.hidden.size() > max_hidden_layers)
    return std::to_string(shape.hidden.size()) + " hidden layers, more than the " +
           std::to_string(max_hidden_layers) + " allowed";
  std::int64_t units = 0;
  for (const auto width : shape.hidden) {
    if (width < 1)
      return "a hidden layer of " + std::to_string(width) + " units";
    if (width > max_hidden_units || (units += width) > max_hidden_units)
      return "more than the " + std::to_string(max_hidden_units) + " hidden units allowed";
  }
  if (static_cast<std::uint8_t>(shape.act) > static_cast<std::uint8_t>(activation::tanh))
    return "an unknown activation";
  return {};
}

std::optional<std::int64_t> checked_dimension(const model_shape& shape, std::int64_t limit) {
  if (shape.features <= 0 || shape.outputs <= 0 || limit <= 0)
    return std::nullopt;
  std::int64_t total = 0;
  std::int64_t in = shape.features;
  for (std::size_t l = 0; l <= shape.hidden.size(); ++l) {
    const std::int64_t width = l < shape.hidden.size() ? shape.hidden[l] : shape.outputs;
    // in * width + width <= limit - total, without overflow.
    if (width <= 0 || in > limit || width > limit || in + 1 > (limit - total) / width)
      return std::nullopt;
    total += (in + 1) * width;
    in = width;
  }
  return total;
}

Eigen::VectorXd initial_theta(const model_shape& shape, std::uint64_t seed) {
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  if (!shape.is_network())
    return theta;
  // mt19937_64's output is fixed by the standard; 53 of its bits make a uniform double exactly,
  // without the library's distributions (whose algorithms vary between implementations).
  std::mt19937_64 bits{seed};
  for (const auto& layer : shape.layers()) {
    const double fan = shape.act == activation::relu ? static_cast<double>(layer.in)
                                                      : static_cast<double>(layer.in + layer.out);
    const double bound = std::sqrt(6.0 / fan);
    for (std::int64_t i = 0; i < layer.in * layer.out; ++i) {
      const double u = static_cast<double>(bits() >> 11) * 0x1.0p-53;  // [0, 1)
      theta[layer.weights + i] = (2 * u - 1) * bound;
    }
  }
  return theta;
}

bool has_hessian(const model_shape& shape) {
  return !shape.is_network();
}

double loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                     Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum,
                     curvature* keep) {
  if (shape.is_network())
    return detail::network_loss_grad_sum(shape, data, rows, theta, grad_sum);
  grad_sum.setZero();
  Eigen::Map<Eigen::MatrixXd> grad_w(grad_sum.data(), shape.features, shape.outputs);
  Eigen::Map<Eigen::VectorXd> grad_b(grad_sum.data() + shape.weight_count(), shape.outputs);
  chunk_products products{shape, data, theta};
  const double loss = loss_chunks(shape, data, rows, products, keep, [&](const chunk& c, const Eigen::MatrixXd& rt) {
    products.backward(c, rt, grad_w, grad_b);
  });
  products.finish(grad_w);
  return loss;
}

curvature curvature_at(const model_shape& shape, const dataset& data, const row_selection& rows,
                       Eigen::Ref<const Eigen::VectorXd> theta) {
  curvature out;
  out.rows = detail::selection_size(rows);
  if (shape.kind == model_kind::linear)
    return out;  // nothing to keep: no pass needed
  chunk_products products{shape, data, theta};
  loss_chunks(shape, data, rows, products, &out, [](const chunk&, const Eigen::MatrixXd&) {});
  return out;
}

void hessian_vector_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                        const curvature& at, Eigen::Ref<const Eigen::VectorXd> v,
                        Eigen::Ref<Eigen::VectorXd> hv_sum) {
  hv_sum.setZero();
  Eigen::Map<Eigen::MatrixXd> hv_w(hv_sum.data(), shape.features, shape.outputs);
  Eigen::Map<Eigen::VectorXd> hv_b(hv_sum.data() + shape.weight_count(), shape.outputs);
  // The products of a "theta" equal to v give u = V^T x + v_b, the change of the scores along v.
  chunk_products products{shape, data, v};
  Eigen::MatrixXd ut;
  Eigen::MatrixXd qt;
  Eigen::MatrixXd ct;
  for_each_chunk(rows, [&](const chunk& c) {
    products.forward(c, ut);
    if (at.d.size() > 0)
      ct = at.d.middleCols(c.first, c.count);
    detail::chunk_curvature_product(shape.kind, ct, ut, qt);
    products.backward(c, qt, hv_w, hv_b);
  });
  products.finish(hv_w);
}

void block_loss_grad(const model_shape& shape, const dataset& data,
                     const std::vector<row_range>& blocks, Eigen::Ref<const Eigen::VectorXd> theta,
                     std::vector<double>& losses, exact_sum& grad, std::vector<curvature>* keep) {
  losses.clear();
  if (keep)
    keep->assign(blocks.size(), curvature{});
  if (shape.is_network()) {
    Eigen::VectorXd sums(shape.dimension());
    for (const auto& block : blocks) {
      losses.push_back(detail::network_loss_grad_sum(shape, data, block, theta, sums));
      grad.deposit(0, sums);
    }
    return;
  }
  chunk_products products{shape, data, theta};
  per_block(shape, data, blocks, products, grad, [&](std::size_t k, auto& grad_w, auto& grad_b) {
    const row_selection rows = blocks[k];
    losses.push_back(loss_chunks(shape, data, rows, products, keep ? &(*keep)[k] : nullptr,
                                 [&](const chunk& c, const Eigen::MatrixXd& rt) {
                                   products.backward(c, rt, grad_w, grad_b);
                                 }));
  });
}

std::vector<curvature> block_curvature(const model_shape& shape, const dataset& data,
                                       const std::vector<row_range>& blocks,
                                       Eigen::Ref<const Eigen::VectorXd> theta) {
  std::vector<curvature> out;
  out.reserve(blocks.size());
  for (const auto& block : blocks)
    out.push_back(curvature_at(shape, data, block, theta));
  return out;
}

void block_hessian_vector(const model_shape& shape, const dataset& data,
                          const std::vector<row_range>& blocks, const std::vector<curvature>& at,
                          Eigen::Ref<const Eigen::VectorXd> v, exact_sum& hv) {
  chunk_products products{shape, data, v};
  Eigen::MatrixXd ut;
  Eigen::MatrixXd qt;
  Eigen::MatrixXd ct;
  per_block(shape, data, blocks, products, hv, [&](std::size_t k, auto& grad_w, auto& grad_b) {
    const row_selection rows = blocks[k];
    for_each_chunk(rows, [&](const chunk& c) {
      products.forward(c, ut);
      if (at[k].d.size() > 0)
        ct = at[k].d.middleCols(c.first, c.count);
      detail::chunk_curvature_product(shape.kind, ct, ut, qt);
      products.backward(c, qt, grad_w, grad_b);
    });
  });
}

void finish_hessian_vector(const model_shape& shape, double lambda, std::int64_t count,
                           Eigen::Ref<const Eigen::VectorXd> v, Eigen::Ref<Eigen::VectorXd> hv) {
  hv *= 1.0 / static_cast<double>(count);
  for (const auto& layer : shape.layers())
    hv.segment(layer.weights, layer.in * layer.out) += lambda * v.segment(layer.weights, layer.in * layer.out);
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
  chunk_products products{shape, data, theta};
  Eigen::MatrixXd zt;
  const row_selection selection = rows;
  for_each_chunk(selection, [&](const chunk& c) {
    products.forward(c, zt);
    z.middleRows(c.first, c.count) = zt.transpose();
  });
  return z;
}

std::int64_t first_invalid_label(const model_shape& shape, const Eigen::VectorXd& labels) {
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
  return -1;
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

// The multilayer perceptron's kernel: forward and backward passes over chunks of rows with Eigen
// matrix products (one product per layer and direction for the whole chunk, never one per example),
// on the float32 features converted to double once per chunk.
//
// Shapes, with m the chunk's rows: activations and deltas are kept transposed, one column per
// example (At_l: width_l x m), so each layer is Zt_l = W_l^T At_{l-1} + b_l and the output layer's
// Zt is what the losses (`chunk_loss`) take. Backward: dW_l += At_{l-1} Dt_l^T, db_l += row sums of
// Dt_l, Dt_{l-1} = (W_l Dt_l) .* act'(At_{l-1}).

#include "model/kernels.hpp"

#include <Eigen/SparseCore>

#include <vector>

namespace shardopt::model::detail {

namespace {

using row_major_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using sparse_rows = Eigen::SparseMatrix<double, Eigen::RowMajor, std::int64_t>;

/// One chunk's input rows in double: dense (m x features, row-major) or sparse (CSR).
class chunk_input {
public:
  explicit chunk_input(const dataset& data) : data_(data) {}

  void load(const chunk& c) {
    if (!data_.is_sparse()) {
      const auto& x = data_.dense();
      if (std::holds_alternative<row_range>(*c.rows)) {
        dense_ = x.middleRows(c.row(0), c.count).cast<double>();
      } else {
        dense_.resize(c.count, x.cols());
        for (std::int64_t j = 0; j < c.count; ++j)
          dense_.row(j) = x.row(c.row(j)).cast<double>();
      }
      return;
    }
    const auto& x = data_.sparse();
    triplets_.clear();
    for (std::int64_t j = 0; j < c.count; ++j)
      for (sparse_view::InnerIterator it(x, c.row(j)); it; ++it)
        triplets_.emplace_back(j, it.index(), static_cast<double>(it.value()));
    sparse_.resize(c.count, x.cols());
    sparse_.setFromTriplets(triplets_.begin(), triplets_.end());
  }

  /// zt (width x m) = W^T X^T for the first layer's weights W (features x width).
  void forward(const Eigen::Ref<const Eigen::MatrixXd>& w, Eigen::MatrixXd& zt) const {
    if (!data_.is_sparse())
      zt.noalias() = w.transpose() * dense_.transpose();
    else
      zt.noalias() = (sparse_ * w).transpose();
  }

  /// grad_w (features x width) += X^T Dt^T.
  void add_weight_gradient(const Eigen::MatrixXd& dt, Eigen::Ref<Eigen::MatrixXd> grad_w) const {
    if (!data_.is_sparse())
      grad_w.noalias() += dense_.transpose() * dt.transpose();
    else
      grad_w.noalias() += sparse_.transpose() * dt.transpose();
  }

private:
  const dataset& data_;
  row_major_matrix dense_;
  sparse_rows sparse_;
  std::vector<Eigen::Triplet<double, std::int64_t>> triplets_;
};

/// The network's parameters as matrices over theta (no copy).
struct layer_view {
  Eigen::Map<const Eigen::MatrixXd> w;
  Eigen::Map<const Eigen::VectorXd> b;
};

std::vector<layer_view> view_layers(const std::vector<layer_span>& spans, const double* theta) {
  std::vector<layer_view> out;
  out.reserve(spans.size());
  for (const auto& s : spans)
    out.push_back({Eigen::Map<const Eigen::MatrixXd>(theta + s.weights, s.in, s.out),
                   Eigen::Map<const Eigen::VectorXd>(theta + s.biases, s.out)});
  return out;
}

void activate(activation act, Eigen::MatrixXd& zt) {
  if (act == activation::relu)
    zt = zt.cwiseMax(0.0);
  else
    zt = zt.array().tanh().matrix();
}

/// dt .*= act'(z), written with the activation's output a = act(z).
void times_derivative(activation act, const Eigen::MatrixXd& at, Eigen::MatrixXd& dt) {
  if (act == activation::relu)
    dt = (at.array() > 0.0).select(dt.array(), 0.0).matrix();
  else
    dt.array() *= 1.0 - at.array().square();
}

/// Forward pass of one loaded chunk: `at[l]` receives hidden layer l's activations, `zt` the output
/// scores.
void forward(const model_shape& shape, const std::vector<layer_view>& layers, const chunk_input& input,
             std::vector<Eigen::MatrixXd>& at, Eigen::MatrixXd& zt) {
  const auto hidden = shape.hidden.size();
  for (std::size_t l = 0; l <= hidden; ++l) {
    auto& out = l < hidden ? at[l] : zt;
    if (l == 0)
      input.forward(layers[0].w, out);
    else
      out.noalias() = layers[l].w.transpose() * at[l - 1];
    out.colwise() += layers[l].b;
    if (l < hidden)
      activate(shape.act, out);
  }
}

} // namespace

double network_loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                             Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum) {
  grad_sum.setZero();
  const auto spans = shape.layers();
  const auto layers = view_layers(spans, theta.data());
  chunk_input input{data};
  std::vector<Eigen::MatrixXd> at(shape.hidden.size());
  Eigen::MatrixXd zt;
  Eigen::MatrixXd dt;
  Eigen::MatrixXd below;
  Eigen::VectorXd y;
  double loss = 0;
  for_each_chunk(rows, [&](const chunk& c) {
    input.load(c);
    forward(shape, layers, input, at, zt);
    gather_labels(data, c, y);
    dt.resize(zt.rows(), zt.cols());
    loss += chunk_loss(shape.kind, zt, y, dt);
    // Backward, from the output layer down.
    for (std::size_t l = spans.size(); l-- > 0;) {
      const auto& s = spans[l];
      Eigen::Map<Eigen::MatrixXd> grad_w(grad_sum.data() + s.weights, s.in, s.out);
      Eigen::Map<Eigen::VectorXd> grad_b(grad_sum.data() + s.biases, s.out);
      grad_b += dt.rowwise().sum();
      if (l == 0) {
        input.add_weight_gradient(dt, grad_w);
        break;
      }
      grad_w.noalias() += at[l - 1] * dt.transpose();
      below.noalias() = layers[l].w * dt;
      times_derivative(shape.act, at[l - 1], below);
      dt.swap(below);
    }
  });
  return loss;
}

void network_scores(const model_shape& shape, const dataset& data, row_range rows,
                    Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::MatrixXd> z) {
  const auto layers = view_layers(shape.layers(), theta.data());
  chunk_input input{data};
  std::vector<Eigen::MatrixXd> at(shape.hidden.size());
  Eigen::MatrixXd zt;
  const row_selection selection = rows;
  for_each_chunk(selection, [&](const chunk& c) {
    input.load(c);
    forward(shape, layers, input, at, zt);
    z.middleRows(c.first, c.count) = zt.transpose();
  });
}

} // namespace shardopt::model::detail

#include "model/linear_model.hpp"

#include <algorithm>
#include <cmath>

namespace shardopt::model {

namespace {

using row_major_matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Rows per chunk: a chunk of dense features converted to double (256 x 784 x 8 bytes = 1.6 MB)
/// stays in cache for both matrix products.
constexpr std::int64_t chunk_rows = 256;

/// log(1 + exp(a)) without overflow.
double softplus(double a) {
  return a > 0 ? a + std::log1p(std::exp(-a)) : std::log1p(std::exp(a));
}

/// 1 / (1 + exp(-a)) without overflow.
double sigmoid(double a) {
  if (a >= 0)
    return 1.0 / (1.0 + std::exp(-a));
  const double e = std::exp(a);
  return e / (1.0 + e);
}

/// Loss sum of one chunk and its residuals dloss/dz. `zt` and `rt` are outputs x examples (one column
/// per example, so that an example's scores are contiguous); `y` holds the chunk's encoded labels.
double chunk_loss(model_kind kind, const Eigen::MatrixXd& zt, const Eigen::VectorXd& y,
                  Eigen::MatrixXd& rt) {
  const Eigen::Index m = zt.cols();
  const Eigen::Index k = zt.rows();
  double loss = 0;
  switch (kind) {
    case model_kind::linear:
      for (Eigen::Index i = 0; i < m; ++i) {
        const double d = zt(0, i) - y(i);
        loss += 0.5 * d * d;
        rt(0, i) = d;
      }
      break;
    case model_kind::logistic:
      for (Eigen::Index i = 0; i < m; ++i) {
        const double t = y(i);
        const double margin = t * zt(0, i);
        loss += softplus(-margin);
        rt(0, i) = -t * sigmoid(-margin);
      }
      break;
    case model_kind::softmax:
      // Stable cross-entropy: log-sum-exp(z) - z_y with the maximum z_top factored out, as
      // (z_top - z_y) + log1p(sum over k != top of exp(z_k - z_top)), exact for tiny losses too.
      for (Eigen::Index i = 0; i < m; ++i) {
        const auto z = zt.col(i);
        const auto label = static_cast<Eigen::Index>(y(i));
        Eigen::Index top_index = 0;
        const double top = z.maxCoeff(&top_index);
        auto r = rt.col(i);
        r = (z.array() - top).exp().matrix();
        r(top_index) = 0.0;  // sum the others alone: 1 + tiny would round the tiny part away
        const double rest = r.sum();
        r(top_index) = 1.0;
        loss += (top - z(label)) + std::log1p(rest);
        r /= 1.0 + rest;
        r(label) -= 1.0;
      }
      break;
    case model_kind::svm:
      for (Eigen::Index i = 0; i < m; ++i) {
        for (Eigen::Index c = 0; c < k; ++c) {
          const double t = k == 1 ? y(i) : (static_cast<Eigen::Index>(y(i)) == c ? 1.0 : -1.0);
          const double slack = 1.0 - t * zt(c, i);
          if (slack > 0) {
            loss += slack * slack;
            rt(c, i) = -2.0 * t * slack;
          } else {
            rt(c, i) = 0.0;
          }
        }
      }
      break;
  }
  return loss;
}

/// The rows of one chunk: either a contiguous range or a slice of an index list.
struct chunk {
  const row_selection* rows;
  std::int64_t first;  // position within the selection
  std::int64_t count;

  std::int64_t row(std::int64_t j) const {
    if (const auto* range = std::get_if<row_range>(rows))
      return range->begin + first + j;
    return std::get<1>(*rows)[static_cast<std::size_t>(first + j)];
  }
};

std::int64_t selection_size(const row_selection& rows) {
  if (const auto* range = std::get_if<row_range>(&rows))
    return range->size();
  return static_cast<std::int64_t>(std::get<1>(rows).size());
}

/// Forward and backward products for one chunk, dense or sparse. Holds the chunk's double copy of
/// the dense features so both products reuse it while it is in cache.
class chunk_products {
public:
  chunk_products(const model_shape& shape, const dataset& data,
                 Eigen::Ref<const Eigen::VectorXd> theta)
    : data_(data),
      w_(theta.data(), shape.features, shape.outputs),
      b_(theta.data() + shape.weight_count(), shape.outputs) {
    if (data.is_sparse())
      w_rows_ = w_;  // row j of W contiguous: one axpy per non-zero
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
      zt.setZero();
      for (std::int64_t j = 0; j < c.count; ++j)
        for (sparse_features::InnerIterator it(x, c.row(j)); it; ++it)
          zt.col(j) += static_cast<double>(it.value()) * w_rows_.row(it.index()).transpose();
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
        grad_rows_ = row_major_matrix::Zero(grad_w.rows(), grad_w.cols());
      const auto& x = data_.sparse();
      for (std::int64_t j = 0; j < c.count; ++j)
        for (sparse_features::InnerIterator it(x, c.row(j)); it; ++it)
          grad_rows_.row(it.index()) += static_cast<double>(it.value()) * rt.col(j).transpose();
    }
    grad_b += rt.rowwise().sum();
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
  row_major_matrix w_rows_;
  row_major_matrix grad_rows_;
  row_major_matrix x_chunk_;
};

/// Calls f(chunk) for consecutive chunks of the selection.
template <class F>
void for_each_chunk(const row_selection& rows, F&& f) {
  const std::int64_t n = selection_size(rows);
  for (std::int64_t first = 0; first < n; first += chunk_rows)
    f(chunk{&rows, first, std::min(chunk_rows, n - first)});
}

void gather_labels(const dataset& data, const chunk& c, Eigen::VectorXd& y) {
  y.resize(c.count);
  if (std::holds_alternative<row_range>(*c.rows)) {
    y = data.y.segment(c.row(0), c.count);
  } else {
    for (std::int64_t j = 0; j < c.count; ++j)
      y(j) = data.y(c.row(j));
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

double loss_grad_sum(const model_shape& shape, const dataset& data, const row_selection& rows,
                     Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad_sum) {
  grad_sum.setZero();
  Eigen::Map<Eigen::MatrixXd> grad_w(grad_sum.data(), shape.features, shape.outputs);
  Eigen::Map<Eigen::VectorXd> grad_b(grad_sum.data() + shape.weight_count(), shape.outputs);
  chunk_products products{shape, data, theta};
  Eigen::MatrixXd zt;
  Eigen::MatrixXd rt;
  Eigen::VectorXd y;
  double loss = 0;
  for_each_chunk(rows, [&](const chunk& c) {
    products.forward(c, zt);
    gather_labels(data, c, y);
    rt.resize(zt.rows(), zt.cols());
    loss += chunk_loss(shape.kind, zt, y, rt);
    products.backward(c, rt, grad_w, grad_b);
  });
  products.finish(grad_w);
  return loss;
}

double finish_objective(const model_shape& shape, double lambda, std::int64_t count, double loss_sum,
                        Eigen::Ref<const Eigen::VectorXd> theta, Eigen::Ref<Eigen::VectorXd> grad) {
  const double inv_n = 1.0 / static_cast<double>(count);
  const auto weights = theta.head(shape.weight_count());
  grad *= inv_n;
  grad.head(shape.weight_count()) += lambda * weights;
  return loss_sum * inv_n + 0.5 * lambda * weights.squaredNorm();
}

Eigen::MatrixXd scores(const model_shape& shape, const dataset& data, row_range rows,
                       Eigen::Ref<const Eigen::VectorXd> theta) {
  Eigen::MatrixXd z(rows.size(), shape.outputs);
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

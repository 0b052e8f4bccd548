#include "model/kernels.hpp"

#include <cmath>

namespace shardopt::model::detail {


double chunk_loss(model_kind kind, const Eigen::MatrixXd& zt, const Eigen::VectorXd& y,
                  Eigen::MatrixXd& rt, Eigen::MatrixXd* ct) {
  const Eigen::Index m = zt.cols();
  const Eigen::Index k = zt.rows();
  if (ct) {
    if (kind == model_kind::linear)
      ct->resize(0, 0);
    else
      ct->resize(kind == model_kind::logistic ? 1 : k, m);
  }
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
      // The loss log(1 + exp(-margin)), s = sigmoid(-margin) and sigmoid(margin), each without
      // overflow or cancellation, from one exp(-|margin|).
      for (Eigen::Index i = 0; i < m; ++i) {
        const double t = y(i);
        const double margin = t * zt(0, i);
        const double e = std::exp(-std::fabs(margin));
        loss += (margin < 0 ? -margin : 0.0) + std::log1p(e);
        const double small = e / (1.0 + e);  // the sigmoid of -|margin|
        const double large = 1.0 / (1.0 + e);  // the sigmoid of |margin|
        const double s = margin > 0 ? small : large;  // sigmoid(-margin)
        rt(0, i) = -t * s;
        if (ct)
          (*ct)(0, i) = s * (margin < 0 ? small : large);  // s (1 - s) without cancellation; t^2 = 1
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
        if (ct)
          ct->col(i) = r;  // the probabilities p: the curvature is diag(p) - p p^T
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
          if (ct)  // the generalized Hessian of the squared hinge (LIBLINEAR's): 2 where active
            (*ct)(c, i) = slack > 0 ? 2.0 : 0.0;
        }
      }
      break;
  }
  return loss;
}

void chunk_curvature_product(model_kind kind, const Eigen::MatrixXd& ct, const Eigen::MatrixXd& ut,
                             Eigen::MatrixXd& qt) {
  switch (kind) {
    case model_kind::linear:
      qt = ut;
      break;
    case model_kind::logistic:
      qt = ut.array() * ct.array();
      break;
    case model_kind::softmax:
      // (diag(p) - p p^T) u = p .* (u - p^T u), column by column.
      qt.resize(ut.rows(), ut.cols());
      for (Eigen::Index i = 0; i < ut.cols(); ++i) {
        const double pu = ct.col(i).dot(ut.col(i));
        qt.col(i) = ct.col(i).cwiseProduct((ut.col(i).array() - pu).matrix());
      }
      break;
    case model_kind::svm:
      qt = ut.array() * ct.array();
      break;
  }
}

std::int64_t selection_size(const row_selection& rows) {
  if (const auto* range = std::get_if<row_range>(&rows))
    return range->size();
  return static_cast<std::int64_t>(std::get<1>(rows).size());
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


} // namespace shardopt::model::detail

#include "optimizer/pcg.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace shardopt::optimizer {

std::optional<run_stop> solve_newton_system(const hessian_function& hessian, run_log& log, vector_pool& pool,
                                            cg_preconditioner& preconditioner, const pcg_settings& settings,
                                            const Eigen::VectorXd& grad, Eigen::VectorXd& s, double& gs,
                                            pcg_workspace& work) {
  const auto n = grad.size();
  const int limit = settings.max_iterations > 0 ? settings.max_iterations
                                                : static_cast<int>(std::max<Eigen::Index>(n, 5));
  auto& r = work.r;   // residual -grad - H s
  auto& z = work.z;   // preconditioned residual
  auto& d = work.d;   // direction
  auto& hd = work.hd;
  // With the diagonal alone (or nothing), z = M^-1 r is computed in the passes that update r.
  const bool pairs = preconditioner.has_pairs();
  for (auto* v : {&s, &r, &z, &d, &hd})
    v->resize(n);
  work.z0.resize(pairs ? n : 0);
  const Eigen::VectorXd& m = preconditioner.diagonal();
  const auto precondition = [&](Eigen::Index begin, Eigen::Index end) {
    auto zb = z.segment(begin, end - begin);
    const auto rb = r.segment(begin, end - begin);
    if (m.size() > 0)
      zb = rb.cwiseQuotient(m.segment(begin, end - begin));
    else
      zb = rb;
    return zb.dot(rb);
  };
  double zr = pool.sum_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
    s.segment(begin, end - begin).setZero();
    r.segment(begin, end - begin) = -grad.segment(begin, end - begin);
    return pairs ? 0.0 : precondition(begin, end);
  });
  if (pairs) {
    preconditioner.apply(r, z);
    zr = pool.dot(z, r);
  }
  pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) { d.segment(begin, end - begin) = z.segment(begin, end - begin); });
  if (pairs)
    work.z0 = z;  // with the diagonal alone, `descend` computes it again
  const double forcing = std::min(settings.cg_tolerance, std::sqrt(std::sqrt(std::max(zr, 0.0) * settings.units)));
  double q = 0;  // the quadratic model at s
  gs = 0;
  for (int k = 1; k <= limit; ++k) {
    log.count_product();
    if (auto ok = hessian(d, hd); !ok)
      return evaluation_failed(ok.error());
    if (hd.size() != n || !hd.allFinite())
      return run_stop{stop_reason::evaluation_failed, "a Hessian-vector product is not finite"};
    const double curvature = pool.dot(d, hd);
    preconditioner.offer(k - 1, d, hd, curvature);
    // The (preconditioned) steepest descent direction, for when CG gives no step: the line
    // search then shortens it as it must.
    const auto descend = [&] {
      if (pairs)
        s = work.z0;
      else
        pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {  // z0 = M^-1 (-grad), as above
          auto sb = s.segment(begin, end - begin);
          sb = -grad.segment(begin, end - begin);
          if (m.size() > 0)
            sb = sb.cwiseQuotient(m.segment(begin, end - begin));
        });
      gs = pool.dot(grad, s);
    };
    if (!(curvature > 0) || !std::isfinite(zr / curvature)) {
      if (k == 1)  // no positive curvature along the first direction
        descend();
      break;       // otherwise s so far is the step
    }
    const double alpha = zr / curvature;
    // s += alpha d, r -= alpha hd; the model Q(s) = -(s'r - s'g)/2 from the new s and r; and z.
    const auto sums = pool.sums<3>(n, [&](Eigen::Index begin, Eigen::Index end) {
      auto sb = s.segment(begin, end - begin);
      auto rb = r.segment(begin, end - begin);
      sb += alpha * d.segment(begin, end - begin);
      rb -= alpha * hd.segment(begin, end - begin);
      return std::array<double, 3>{sb.dot(rb), sb.dot(grad.segment(begin, end - begin)),
                                   pairs ? 0.0 : precondition(begin, end)};
    });
    if (!std::isfinite(sums[0]) || !std::isfinite(sums[1])) {  // a step past a double's range
      descend();
      break;
    }
    gs = sums[1];
    const double q_next = -0.5 * (sums[0] - sums[1]);
    const double decrease = q_next - q;
    if (!(q_next <= 0 && decrease <= 0))
      break;  // the model no longer decreases (rounding near the minimum)
    if (k * decrease >= forcing * q_next)
      break;
    q = q_next;
    double zr_next = sums[2];
    if (pairs) {
      preconditioner.apply(r, z);
      zr_next = pool.dot(z, r);
    }
    const double beta = zr_next / zr;
    pool.for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
      d.segment(begin, end - begin) = z.segment(begin, end - begin) + beta * d.segment(begin, end - begin);
    });
    zr = zr_next;
  }
  return std::nullopt;
}

} // namespace shardopt::optimizer

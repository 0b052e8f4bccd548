/// The losses of model/linear_model.hpp against their definitions: per-example losses from their
/// formulas, gradients against central differences (also across chunk boundaries), and finite,
/// asymptotically right values for huge scores. Randomized tests use a fixed default seed, print it
/// on failure and accept another from SHARDOPT_TEST_SEED.

#include "linear_fixtures.hpp"

#include <doctest/doctest.h>

#include <Eigen/Cholesky>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace shardopt::test::linear;

TEST_CASE("gradients match central differences for every model, dense and sparse") {
  for (const auto& c : all_cases())
    for (int trial = 0; trial < 3; ++trial)
      check_case_gradients(c, 37,
                           base_seed() + 1000 * static_cast<std::uint64_t>(c.kind)
                             + 100 * static_cast<std::uint64_t>(c.outputs)
                             + static_cast<std::uint64_t>(trial));
}

TEST_CASE("least squares charges 0.5 (z - y)^2 per example") {
  const model_shape shape{model_kind::linear, 2, 1};
  const std::vector<double> x{1.0, 2.0};
  const VectorXd theta = make_theta({{0.25, -0.5}}, {2.0});
  const double y = -0.5;
  const double z = 0.25 * 1.0 - 0.5 * 2.0 + 2.0;  // 1.25
  CHECK(single_scores(shape, x, theta)(0) == z);
  check_single(shape, x, y, theta, 0.5 * (z - y) * (z - y), VectorXd::Constant(1, z - y));
}

TEST_CASE("logistic loss is log(1 + exp(-t z)) per example") {
  const model_shape shape{model_kind::logistic, 2, 1};
  const std::vector<double> x{1.0, 2.0};
  SUBCASE("z = 0 gives log 2 for either label") {
    const VectorXd theta = make_theta({{0.5, -0.5}}, {0.5});  // z = 0.5 - 1 + 0.5 = 0
    REQUIRE(single_scores(shape, x, theta)(0) == 0.0);
    for (const double t : {1.0, -1.0}) {
      INFO("t = " << t);
      // dloss/dz = -t exp(-t z) / (1 + exp(-t z)) = -t / 2 at z = 0
      check_single(shape, x, t, theta, std::log(2.0), VectorXd::Constant(1, -t / 2));
    }
  }
  SUBCASE("moderate scores") {
    const VectorXd theta = make_theta({{0.25, -0.5}}, {2.0});  // z = 1.25
    const double z = single_scores(shape, x, theta)(0);
    for (const double t : {1.0, -1.0}) {
      INFO("t = " << t);
      const double e = std::exp(-t * z);
      check_single(shape, x, t, theta, std::log(1.0 + e), VectorXd::Constant(1, -t * e / (1.0 + e)));
    }
  }
}

TEST_CASE("softmax loss is log-sum-exp(z) - z_y per example") {
  const std::vector<double> x{1.0, 2.0};
  SUBCASE("equal scores give log K") {
    for (const std::int64_t k : {3, 5}) {
      const model_shape shape{model_kind::softmax, 2, k};
      // W = 0, all biases 0.75: every score equal.
      const VectorXd theta = [&] {
        VectorXd t = VectorXd::Zero(shape.dimension());
        t.tail(k).setConstant(0.75);
        return t;
      }();
      for (std::int64_t label = 0; label < k; ++label) {
        INFO("K = " << k << ", label " << label);
        VectorXd r = VectorXd::Constant(k, 1.0 / static_cast<double>(k));
        r(label) -= 1.0;
        check_single(shape, x, static_cast<double>(label), theta,
                     std::log(static_cast<double>(k)), r);
      }
    }
  }
  SUBCASE("distinct scores") {
    const model_shape shape{model_kind::softmax, 2, 3};
    const VectorXd theta = make_theta({{0.25, -0.5}, {1.0, 0.5}, {-1.0, 0.0}}, {0.0, -1.0, 0.5});
    const VectorXd z = single_scores(shape, x, theta);  // (-0.75, 1, -0.5)
    double sum_exp = 0;
    for (Eigen::Index k = 0; k < 3; ++k)
      sum_exp += std::exp(z(k));
    for (std::int64_t label = 0; label < 3; ++label) {
      INFO("label " << label);
      VectorXd r(3);
      for (Eigen::Index k = 0; k < 3; ++k)
        r(k) = std::exp(z(k)) / sum_exp - (k == label ? 1.0 : 0.0);
      check_single(shape, x, static_cast<double>(label), theta, std::log(sum_exp) - z(label), r);
    }
  }
}

TEST_CASE("squared hinge is max(0, 1 - t z)^2 per example and output") {
  const std::vector<double> x{1.0, 2.0};
  SUBCASE("binary: t z = 0.5 gives 0.25, t z >= 1 gives 0") {
    const model_shape shape{model_kind::svm, 2, 1};
    const VectorXd half = make_theta({{0.5, -0.5}}, {1.0});  // z = 0.5 - 1 + 1 = 0.5
    REQUIRE(single_scores(shape, x, half)(0) == 0.5);
    // t = +1: slack 0.5, loss 0.25, dloss/dz = -2 t slack = -1.
    check_single(shape, x, 1.0, half, 0.25, VectorXd::Constant(1, -1.0));
    // t = -1: slack 1.5, loss 2.25, dloss/dz = +3.
    check_single(shape, x, -1.0, half, 2.25, VectorXd::Constant(1, 3.0));

    const VectorXd negative_half = -half;  // z = -0.5
    check_single(shape, x, -1.0, negative_half, 0.25, VectorXd::Constant(1, 1.0));

    const VectorXd beyond = make_theta({{0.25, -0.5}}, {2.0});  // z = 1.25: margin satisfied
    check_single(shape, x, 1.0, beyond, 0.0, VectorXd::Zero(1));

    const VectorXd at_kink = make_theta({{0.5, -0.5}}, {1.5});  // z = 1 exactly: loss and slope 0
    REQUIRE(single_scores(shape, x, at_kink)(0) == 1.0);
    check_single(shape, x, 1.0, at_kink, 0.0, VectorXd::Zero(1));
  }
  SUBCASE("one-vs-rest sums the hinge over classes") {
    const model_shape shape{model_kind::svm, 2, 3};
    // z = (0.5, 0.25, -2) exactly.
    const VectorXd theta = make_theta({{0.5, 0.0}, {0.0, 0.125}, {-1.0, -0.5}}, {0.0, 0.0, 0.0});
    const VectorXd z = single_scores(shape, x, theta);
    REQUIRE(z(0) == 0.5);
    REQUIRE(z(1) == 0.25);
    REQUIRE(z(2) == -2.0);
    // label 0: t = (+1, -1, -1), slacks (0.5, 1.25, -1) -> 0.25 + 1.5625 + 0.
    check_single(shape, x, 0.0, theta, 0.25 + 1.5625, (VectorXd(3) << -1.0, 2.5, 0.0).finished());
    // label 1: t = (-1, +1, -1), slacks (1.5, 0.75, -1) -> 2.25 + 0.5625 + 0.
    check_single(shape, x, 1.0, theta, 2.25 + 0.5625, (VectorXd(3) << 3.0, -1.5, 0.0).finished());
    // label 2: t = (-1, -1, +1), slacks (1.5, 1.25, 3) -> 2.25 + 1.5625 + 9.
    check_single(shape, x, 2.0, theta, 2.25 + 1.5625 + 9.0,
                 (VectorXd(3) << 3.0, 2.5, -6.0).finished());
  }
}

TEST_CASE("logistic loss is finite and asymptotically right for huge scores") {
  const model_shape shape{model_kind::logistic, 1, 1};
  const std::vector<double> x{1.0};
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    for (const double z : {1000.0, -1000.0, 40.0, -40.0}) {
      for (const double t : {1.0, -1.0}) {
        const double margin = t * z;
        INFO("z = " << z << ", t = " << t);
        const evaluation e = whole(shape, single_example(x, t, is_sparse), make_theta({{z}}, {0.0}));
        REQUIRE(std::isfinite(e.loss));
        REQUIRE(e.grad.allFinite());
        if (margin < 0) {
          // log(1 + exp(-m)) = -m + log(1 + exp(m)); the second term is below 1e-17 here.
          CHECK(close_scalars(e.loss, -margin, 1e-15));
          // dloss/dz = -t / (1 + exp(m)) -> -t.
          CHECK(close_scalars(e.grad(0), -t, 1e-15));
          CHECK(close_scalars(e.grad(1), -t, 1e-15));
        } else {
          // log(1 + u) = u - u^2/2 + ..., u = exp(-m): relative error below u.
          const double u = std::exp(-margin);
          CHECK(e.loss >= 0.0);
          CHECK(std::abs(e.loss - u) <= 1e-15 * u + 1e-300);
          CHECK(std::abs(e.grad(0) + t * u) <= 1e-15 * u + 1e-300);
        }
      }
    }
  }
}

TEST_CASE("softmax loss is finite and asymptotically right for huge scores") {
  const model_shape shape{model_kind::softmax, 1, 3};
  const std::vector<double> x{1.0};
  for (const bool is_sparse : {false, true}) {
    INFO((is_sparse ? "sparse" : "dense"));
    {
      INFO("scores (1000, 999, -1000)");
      const VectorXd theta = make_theta({{1000.0}, {999.0}, {-1000.0}}, {0.0, 0.0, 0.0});
      // p = (1, e^-1, e^-2000) / (1 + e^-1 + e^-2000); e^-2000 is 0 in double.
      const double tail = std::log1p(std::exp(-1.0));
      const double p0 = 1.0 / (1.0 + std::exp(-1.0));
      const double p1 = std::exp(-1.0) / (1.0 + std::exp(-1.0));
      const double expected_loss[] = {tail, 1.0 + tail, 2000.0 + tail};
      for (std::int64_t label = 0; label < 3; ++label) {
        INFO("label " << label);
        VectorXd r(3);
        r << p0, p1, 0.0;
        r(label) -= 1.0;
        // log-sum-exp(z) - z_y cancels scores of size 1e3: allow 1e-14 of that scale.
        check_single(shape, x, static_cast<double>(label), theta,
                     expected_loss[static_cast<std::size_t>(label)], r, 1e-14, 1e3);
      }
    }
    {
      INFO("equal scores of -1000 give log K");
      const VectorXd theta = make_theta({{-1000.0}, {-1000.0}, {-1000.0}}, {0.0, 0.0, 0.0});
      VectorXd r = VectorXd::Constant(3, 1.0 / 3.0);
      r(1) -= 1.0;
      check_single(shape, x, 1.0, theta, std::log(3.0), r, 1e-14, 1e3);
    }
  }
}

TEST_CASE("huge random scores: losses and gradients stay finite and approach their hard limits") {
  // theta scaled so |z| ~ 1e3. Then log(1 + exp(-m)) = max(0, -m) + log1p(exp(-|m|)) with the second
  // term in [0, exp(-|m|)], and log-sum-exp(z) - z_y = (max z - z_y) + [0, (K-1) exp(-gap)], where gap
  // is the distance between the two largest scores. The residuals approach their hard-max values with
  // the same exponentially small bounds; the test asserts those bounds exactly.
  constexpr double scale = 1e3;
  for (const bool is_sparse : {false, true}) {
    const std::uint64_t seed = base_seed() + 7;
    INFO("seed " << seed << (is_sparse ? ", sparse" : ", dense"));
    std::mt19937_64 rng{seed};
    {
      INFO("logistic");
      const model_case c{model_kind::logistic, 1};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, 37, 6, rng);
      const VectorXd theta = scale * random_theta(shape, 1.0, rng);
      const evaluation e = whole(shape, p.get(is_sparse), theta);
      REQUIRE(std::isfinite(e.loss));
      REQUIRE(e.grad.allFinite());
      const MatrixXd z = reference_scores(shape, p.dense.dense(), theta, row_range{0, 37});
      double hard_loss = 0;
      double slack = 0;
      VectorXd hard_grad = VectorXd::Zero(shape.dimension());
      for (std::int64_t i = 0; i < 37; ++i) {
        const double t = p.dense.y(i);
        const double m = t * z(i, 0);
        hard_loss += std::max(0.0, -m);
        const double row_norm = p.dense.dense().row(i).cast<double>().norm() + 1.0;
        slack += std::exp(-std::abs(m)) * row_norm;
        if (m < 0) {
          hard_grad.head(6) += -t * p.dense.dense().row(i).cast<double>().transpose();
          hard_grad(6) += -t;
        }
      }
      INFO("loss " << e.loss << ", hard limit " << hard_loss << ", slack " << slack);
      CHECK(hard_loss > 100.0);
      CHECK(e.loss >= hard_loss * (1 - 1e-12));
      CHECK(e.loss <= hard_loss * (1 + 1e-12) + slack);
      CHECK((e.grad - hard_grad).norm() <= 1e-12 * hard_grad.norm() + slack);
    }
    {
      INFO("softmax K=5");
      const model_case c{model_kind::softmax, 5};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, 37, 6, rng);
      const VectorXd theta = scale * random_theta(shape, 1.0, rng);
      const evaluation e = whole(shape, p.get(is_sparse), theta);
      REQUIRE(std::isfinite(e.loss));
      REQUIRE(e.grad.allFinite());
      const MatrixXd z = reference_scores(shape, p.dense.dense(), theta, row_range{0, 37});
      double hard_loss = 0;
      double loss_slack = 0;
      double grad_slack = 0;
      VectorXd hard_grad = VectorXd::Zero(shape.dimension());
      for (std::int64_t i = 0; i < 37; ++i) {
        Eigen::Index top = 0;
        const double best = z.row(i).maxCoeff(&top);
        double second = -std::numeric_limits<double>::infinity();
        for (Eigen::Index k = 0; k < 5; ++k)
          if (k != top)
            second = std::max(second, z(i, k));
        const auto label = static_cast<Eigen::Index>(p.dense.y(i));
        hard_loss += best - z(i, label);
        const double bound = 4.0 * std::exp(-(best - second));  // (K - 1) exp(-gap)
        loss_slack += bound;
        grad_slack += 2.0 * bound * (p.dense.dense().row(i).cast<double>().norm() + 1.0);
        // Hard residual e_top - e_label.
        for (const auto& [k, sign] : {std::pair{top, 1.0}, std::pair{label, -1.0}}) {
          hard_grad.segment(k * 6, 6) += sign * p.dense.dense().row(i).cast<double>().transpose();
          hard_grad(shape.weight_count() + k) += sign;
        }
      }
      INFO("loss " << e.loss << ", hard limit " << hard_loss << ", slack " << loss_slack);
      CHECK(hard_loss > 100.0);
      CHECK(e.loss >= hard_loss * (1 - 1e-12));
      CHECK(e.loss <= hard_loss * (1 + 1e-12) + loss_slack);
      CHECK((e.grad - hard_grad).norm() <= 1e-12 * hard_grad.norm() + grad_slack);
    }
    {
      INFO("squared hinge K=4 stays finite");
      const model_case c{model_kind::svm, 4};
      const model_shape shape = shape_of(c, 6);
      const problem p = random_problem(c, 37, 6, rng);
      const VectorXd theta = scale * random_theta(shape, 1.0, rng);
      const evaluation e = whole(shape, p.get(is_sparse), theta);
      CHECK(std::isfinite(e.loss));
      CHECK(e.grad.allFinite());
    }
  }
}

TEST_CASE("gradients match central differences across chunk boundaries (600 rows)") {
  for (const auto& c : all_cases())
    check_case_gradients(c, 600,
                         base_seed() + 6000 + 1000 * static_cast<std::uint64_t>(c.kind)
                           + static_cast<std::uint64_t>(c.outputs));
}

TEST_CASE("softmax keeps tiny losses: a correct class ahead by 40 costs 2 exp(-40), not 0") {
  // One example, one feature equal to 1: the scores are the weights (biases 0).
  dataset data;
  dense_features x(1, 1);
  x(0, 0) = 1.0f;
  data.x = x;
  data.y = Eigen::VectorXd::Zero(1);
  const shardopt::model::model_shape shape{shardopt::model::model_kind::softmax, 1, 3};
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(shape.dimension());
  theta.head(3) << 10.0, -30.0, -30.0;
  Eigen::VectorXd grad(shape.dimension());
  const double loss =
    shardopt::model::loss_grad_sum(shape, data, shardopt::model::row_range{0, 1}, theta, grad);
  const double expected = std::log1p(2 * std::exp(-40.0));
  CHECK(loss > 0);
  CHECK(loss == doctest::Approx(expected).epsilon(1e-12));
}

// The L-BFGS matrix with its pairs on their supports (OWL-QN's) against LBFGS++'s dense one: the
// same direction, to rounding, for sparse pairs (with entries where only y is non-zero), dense ones
// and a mix, through the ring's wrap, with only the supports stored.

#include "optimizer/lbfgspp.hpp"
#include "optimizer/sparse_bfgs.hpp"
#include "optimizer/vector_pool.hpp"

#include <doctest/doctest.h>

#include <array>
#include <chrono>
#include <random>
#include <thread>

namespace opt = shardopt::optimizer;

namespace {

/// A pair (s, y) with s'y > 0 on `support` random entries of `n` (all of them when support = n).
std::pair<Eigen::VectorXd, Eigen::VectorXd> random_pair(Eigen::Index n, Eigen::Index support, std::mt19937& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::uniform_int_distribution<Eigen::Index> entry(0, n - 1);
  Eigen::VectorXd s = Eigen::VectorXd::Zero(n);
  Eigen::VectorXd y = Eigen::VectorXd::Zero(n);
  for (Eigen::Index k = 0; k < support; ++k) {
    const auto i = support == n ? k : entry(rng);
    s[i] = value(rng);
    y[i] = s[i] * (0.5 + std::abs(value(rng))) + 0.1 * value(rng);  // curvature positive on the whole
  }
  // y without s, as OWL-QN's pairs have where a non-zero weight did not move.
  for (Eigen::Index k = 0; k < support / 4 + 1; ++k) {
    const auto i = entry(rng);
    if (s[i] == 0)
      y[i] = value(rng);
  }
  return {s, y};
}

} // namespace

TEST_CASE("the sparse BFGS matrix gives LBFGS++'s direction for sparse, dense and mixed pairs, and stores the supports") {
  const Eigen::Index n = 2000;
  const int history = 5;
  for (const auto& supports : {std::vector<Eigen::Index>{40, 7, 300, 1, 90, 12, 60, 5},
                              std::vector<Eigen::Index>{n, n, n, n, n, n, n},
                              std::vector<Eigen::Index>{30, n, 1500, 20, n, 8, 400, n}}) {
    CAPTURE(supports.size());
    std::mt19937 rng{7};
    opt::bfgs_matrix dense;
    opt::sparse_bfgs sparse;
    dense.reset(n, history);
    sparse.reset(n, history);
    std::vector<Eigen::Index> kept;
    for (const auto support : supports) {
      auto [s, y] = random_pair(n, support, rng);
      REQUIRE(s.dot(y) > 0);
      dense.add_correction(s, y);
      const double ys = sparse.stage(s, y);
      CHECK(ys == doctest::Approx(s.dot(y)).epsilon(1e-12));
      CHECK(ys == opt::sparse_bfgs::curvature(s, y));  // the same bits
      sparse.commit();
      kept.push_back(((s.array() != 0) || (y.array() != 0)).count());
      const Eigen::VectorXd v = Eigen::VectorXd::Random(n);
      Eigen::VectorXd want;
      Eigen::VectorXd got;
      dense.apply(v, -1.0, want);
      sparse.apply(v, -1.0, got);
      CHECK(sparse.pairs() == dense.pairs());
      CHECK((got - want).norm() <= 1e-12 * want.norm());
      // Only the supports are stored; a pair over more than half the dimension is kept dense.
      std::int64_t stored = 0;
      for (auto k = kept.size() > history ? kept.size() - history : 0; k < kept.size(); ++k)
        stored += 2 * kept[k] > n ? n : kept[k];
      CHECK(sparse.stored() == stored);
    }
  }
}

TEST_CASE("the sparse BFGS matrix without pairs scales v, and a reset forgets its pairs") {
  opt::sparse_bfgs sparse;
  sparse.reset(3, 2);
  Eigen::VectorXd out;
  sparse.apply(Eigen::Vector3d{1, -2, 0}, -0.5, out);
  CHECK(out == Eigen::Vector3d{-0.5, 1, 0});
  CHECK(sparse.stage(Eigen::Vector3d{1, 0, 0}, Eigen::Vector3d{2, 0, 0}) == 2.0);
  CHECK(sparse.pairs() == 0);  // staged, not added
  sparse.commit();
  sparse.apply(Eigen::Vector3d{1, 0, 0}, 1.0, out);
  CHECK(out[0] == doctest::Approx(0.5));  // the curvature 2 along the pair's direction, inverted
  sparse.reset(3, 2);
  CHECK(sparse.pairs() == 0);
  CHECK(sparse.stored() == 0);
}

TEST_CASE("the vector pool's sums add the chunks in order, whichever thread ends first") {
  // Figures whose sum depends on the order of addition: 1e16 then many 1s, the chunks ending in
  // reverse order (the first sleeps longest), on 1 to 4 threads.
  const Eigen::Index chunks = 6;
  const Eigen::Index n = chunks * opt::vector_pool::chunk;
  const auto figures = [](Eigen::Index begin, Eigen::Index) {
    const auto c = begin / opt::vector_pool::chunk;
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * (chunks - c)));
    return std::array<double, 2>{c == 0 ? 1e16 : 1.0, c == chunks - 1 ? 1e16 : -1.0};
  };
  std::array<double, 2> want{};
  for (Eigen::Index c = 0; c < chunks; ++c) {
    const auto f = figures(c * opt::vector_pool::chunk, 0);
    want[0] += f[0];
    want[1] += f[1];
  }
  CHECK(want[0] != 1e16 + 5.0);  // rounding shows the order: 1e16 + 1 + ... + 1 is 1e16
  for (const int threads : {1, 2, 4}) {
    opt::vector_pool pool{threads};
    const auto got = pool.sums<2>(n, figures);
    CHECK(got[0] == want[0]);
    CHECK(got[1] == want[1]);
    CHECK(pool.sum_chunks(n, [&](Eigen::Index begin, Eigen::Index end) { return figures(begin, end)[1]; }) == want[1]);
  }
}

TEST_CASE("a pair staged from candidate lists is the pair of a full scan, bit for bit, and a stage not committed is dropped") {
  const Eigen::Index n = 500;
  std::mt19937 rng{11};
  auto [s, y] = random_pair(n, 30, rng);
  // Candidates: every entry where s or y is not zero, and others, in increasing lists.
  std::vector<std::vector<Eigen::Index>> lists(3);
  for (Eigen::Index i = 0; i < n; ++i)
    if (s[i] != 0 || y[i] != 0 || i % 7 == 0)
      lists[static_cast<std::size_t>(i * 3 / n)].push_back(i);
  opt::sparse_bfgs scanned;
  opt::sparse_bfgs listed;
  scanned.reset(n, 2);
  listed.reset(n, 2);
  const double ys = scanned.stage(s, y);
  CHECK(listed.stage(s, y, &lists) == ys);
  CHECK(ys == opt::sparse_bfgs::curvature(s, y));
  scanned.commit();
  // A pair staged and not committed, then another staged and committed: the first leaves no trace.
  auto [s2, y2] = random_pair(n, 20, rng);
  listed.stage(s2, y2);
  listed.stage(s, y, &lists);
  listed.commit();
  CHECK(listed.pairs() == 1);
  CHECK(listed.stored() == scanned.stored());
  const Eigen::VectorXd v = Eigen::VectorXd::Random(n);
  Eigen::VectorXd a;
  Eigen::VectorXd b;
  scanned.apply(v, -1.0, a);
  listed.apply(v, -1.0, b);
  CHECK((a.array() == b.array()).all());
}

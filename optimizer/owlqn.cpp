// OWL-QN's loop: the resumable L-BFGS loop of lbfgs.cpp with the three changes of Andrew and Gao —
// the pseudo-gradient in place of the gradient, the direction constrained to its orthant, and a
// backtracking search whose trials are projected onto that orthant. libLBFGS's OWL-QN (Okazaki) was
// read for the sufficient-decrease test (on the pseudo-gradient times the projected step; the
// paper's statement has a sign slip) and the first step (1 / ||pg||).

#include "optimizer/owlqn.hpp"

#include "optimizer/lbfgs_memory.hpp"
#include "optimizer/sparse_bfgs.hpp"
#include "optimizer/vector_pool.hpp"

#include <array>
#include <cmath>
#include <optional>
#include <string>

namespace shardopt::optimizer {

Eigen::VectorXd pseudo_gradient(const Eigen::VectorXd& x, const Eigen::VectorXd& g, const Eigen::VectorXd& c) {
  Eigen::VectorXd pg(g.size());
  for (Eigen::Index i = 0; i < x.size(); ++i)
    pg[i] = pseudo_gradient_entry(x[i], g[i], c[i]);
  return pg;
}

double l1_term(const Eigen::VectorXd& x, const Eigen::VectorXd& c) {
  return c.cwiseProduct(x.cwiseAbs()).sum();
}

std::int64_t nonzero_penalised(const Eigen::VectorXd& x, const Eigen::VectorXd& c) {
  return ((c.array() > 0) && (x.array() != 0)).count();
}

namespace {

double sign(double v) {
  return static_cast<double>((v > 0) - (v < 0));
}

result<void> check_penalty(const Eigen::VectorXd& c, Eigen::Index n) {
  if (c.size() != n)
    return fail_invalid("the L1 weights have " + std::to_string(c.size()) + " entries, theta " + std::to_string(n));
  if (!c.allFinite() || (c.array() < 0).any())
    return fail_invalid("the L1 weights must be finite and non-negative");
  return {};
}


/// One OWL-QN run: the loop, and the state it hands its session. Its passes over the dimension
/// run on the pool's threads in chunks, their sums added in chunk order: the same bits on any.
class owlqn_loop {
public:
  owlqn_loop(const evaluate_function& f, run_log& log, const lbfgs_options& o, const Eigen::VectorXd& c,
             const lbfgs_session& session)
    : f_(f), log_(log), o_(o), c_(c), session_(session), pool_(o.pool ? *o.pool : alone_) {}

  /// Runs from x (or the session's state), leaving x at the last accepted iterate.
  run_stop run(Eigen::VectorXd& x);
  const sparse_bfgs& memory() const { return bfgs_; }

private:
  using chunk_sums = std::array<double, 2>;

  /// F at `at` (f's gradient into `grad`) given the L1 term there, counted.
  result<double> evaluate(const Eigen::VectorXd& at, Eigen::VectorXd& grad, double l1) {
    log_.count_evaluation();
    auto value = f_(at, grad);
    if (!value)
      return value;
    return *value + l1;
  }

  /// The L1 term at x, summed as the trials of `search` sum it.
  double l1_of(const Eigen::VectorXd& x) {
    return pool_.sum_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
      double part = 0;
      for (Eigen::Index i = begin; i < end; ++i)
        part += c_[i] * std::abs(x[i]);
      return part;
    });
  }

  /// Records x's figures (the pseudo-gradient's norms, the non-zero count) and its free entries,
  /// in one pass over the dimension into the kept pg_ and free_ (a list for each chunk).
  void record(const Eigen::VectorXd& x) {
    const auto n = x.size();
    pg_.resize(n);
    free_.resize(static_cast<std::size_t>((n + vector_pool::chunk - 1) / vector_pool::chunk));
    const double nonzeros = pool_.sum_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
      auto& part = free_[static_cast<std::size_t>(begin / vector_pool::chunk)];
      part.clear();
      double count = 0;
      for (Eigen::Index i = begin; i < end; ++i) {
        pg_[i] = pseudo_gradient_entry(x[i], g_[i], c_[i]);
        count += c_[i] > 0 && x[i] != 0;
        if (!(c_[i] > 0) || x[i] != 0 || pg_[i] != 0)
          part.push_back(i);
      }
      return count;
    });
    log_.set_nonzeros(static_cast<std::int64_t>(nonzeros));
  }

  /// The sums over the free entries of the N figures f(i) returns for entry i, chunk by chunk of
  /// the dimension in order: the same bits on any threads, and those of a sum over every entry
  /// whose figures are +0 off the list (as the L1 term's and the slope's are).
  template <std::size_t N, class F>
  std::array<double, N> over_free(Eigen::Index n, F f) {
    return pool_.sums<N>(n, [&](Eigen::Index begin, Eigen::Index) {
      std::array<double, N> part{};
      for (const auto i : free_[static_cast<std::size_t>(begin / vector_pool::chunk)]) {
        const auto figures = f(i);
        for (std::size_t j = 0; j < N; ++j)
          part[j] += figures[j];
      }
      return part;
    });
  }

  /// dst = src on the pool.
  void copy(const Eigen::VectorXd& src, Eigen::VectorXd& dst) {
    dst.resize(src.size());
    pool_.for_chunks(src.size(), [&](Eigen::Index begin, Eigen::Index end) {
      dst.segment(begin, end - begin) = src.segment(begin, end - begin);
    });
  }

  std::optional<run_stop> finished(const Eigen::VectorXd& x) const {
    const double norm = pg_.norm();
    if (norm <= o_.epsilon || norm <= o_.epsilon_rel * x.norm())
      return run_stop{stop_reason::converged, ""};
    if (o_.max_iterations > 0 && log_.info().iteration >= o_.max_iterations)
      return run_stop{stop_reason::max_iterations, ""};
    return std::nullopt;
  }

  /// The direction at x: L-BFGS's of the pseudo-gradient (steepest descent without pairs, with a
  /// first step of 1 / ||pg||), its penalised entries that disagree with -pg zeroed.
  double direction() {
    if (bfgs_.pairs() == 0) {
      d_.noalias() = -pg_;
      return 1 / pg_.norm();
    }
    bfgs_.apply(pg_, -1.0, d_);
    pool_.for_chunks(d_.size(), [&](Eigen::Index begin, Eigen::Index end) {
      auto d = d_.segment(begin, end - begin).array();
      const auto pg = pg_.segment(begin, end - begin).array();
      d = ((c_.segment(begin, end - begin).array() > 0) && (d * pg >= 0)).select(0.0, d);
    });
    return 1;
  }

  /// Backtracks from `step` along d_ within x's orthant; on success xt_, gt_, ft_ hold the point.
  /// Only the free entries move: elsewhere pg and d are 0, and the trial is x.
  std::optional<run_stop> search(const Eigen::VectorXd& x, double& step) {
    const double slope =
      over_free<1>(x.size(), [&](Eigen::Index i) { return std::array<double, 1>{pg_[i] * d_[i]}; })[0];
    if (!(slope < 0))
      return run_stop{stop_reason::line_search_failed, "the search direction does not decrease the objective"};
    copy(x, xt_);
    for (int trial = 0; trial < o_.max_linesearch; ++trial, step /= 2) {
      // The trial, an entry that leaves the orthant (x's sign, or -pg's at 0) set to 0; with the
      // L1 term there and pg'(trial - x) in the same pass.
      const auto [l1, decrease] = over_free<2>(x.size(), [&](Eigen::Index i) {
        const double t = x[i] + step * d_[i];
        const double orthant = x[i] != 0 ? sign(x[i]) : sign(-pg_[i]);
        xt_[i] = c_[i] > 0 && t * orthant <= 0 ? 0.0 : t;
        return chunk_sums{c_[i] * std::abs(xt_[i]), pg_[i] * (xt_[i] - x[i])};
      });
      auto value = evaluate(xt_, gt_, l1);
      if (!value)
        return evaluation_failed(value.error());
      ft_ = *value;
      // Strictly lower too: at machine precision the sufficient-decrease bound rounds to F itself,
      // and equal trials would be accepted forever without progress.
      if (std::isfinite(ft_) && gt_.allFinite() && ft_ < fx_ && ft_ <= fx_ + o_.ftol * decrease)
        return std::nullopt;
    }
    return run_stop{stop_reason::line_search_failed,
                    "no step along the orthant-wise direction decreased the objective enough (it may be at "
                    "machine precision; consider a larger epsilon)"};
  }

  /// Hands the session the state after this iteration, with the pair (s, y) when it is kept.
  std::optional<run_stop> hand_out(const Eigen::VectorXd& x, bool kept, bool last) {
    return detail::hand_out(session_, state_, kept ? &s_ : nullptr, &y_, o_.history, x, g_, fx_, log_, last);
  }

  const evaluate_function& f_;
  run_log& log_;
  const lbfgs_options& o_;
  const Eigen::VectorXd& c_;
  const lbfgs_session& session_;
  vector_pool alone_;  // the caller's thread, without a pool of the options'
  vector_pool& pool_;
  sparse_bfgs bfgs_;  // its pairs as sparse as the model: see sparse_bfgs.hpp
  lbfgs_state state_;  // what `on_state` sees; its pairs are kept only when someone looks
  double fx_ = 0;      // F at x
  double ft_ = 0;      // F at the accepted trial
  Eigen::VectorXd g_, pg_, d_, xt_, gt_, s_, y_;
  // x's free entries, increasing: those not penalised, not 0, or whose pseudo-gradient is not 0.
  // The others (c > 0, x = 0, pg = 0: most of a sparse model's) stay 0 through a step, with s =
  // y = 0, so a step's passes after `record` need only these.
  // One list for each of the pool's chunks of the dimension.
  std::vector<std::vector<Eigen::Index>> free_;
};

run_stop owlqn_loop::run(Eigen::VectorXd& x) {
  const auto n = x.size();
  bfgs_.reset(n, o_.history);
  g_.resize(n);
  if (session_.resume) {
    detail::resume_memory(*session_.resume, x, fx_, g_,
                          [this](const Eigen::VectorXd& s, const Eigen::VectorXd& y) {
                            bfgs_.stage(s, y);
                            bfgs_.commit();
                          },
                          log_, state_, session_);
  } else {
    auto value = evaluate(x, g_, l1_of(x));
    if (!value)
      return evaluation_failed(value.error());
    fx_ = *value;
    if (!std::isfinite(fx_) || !g_.allFinite())
      return {stop_reason::evaluation_failed, "objective or gradient is not finite at the initial theta"};
  }
  record(x);
  log_.record(fx_, pg_, 0);
  if (auto stop = finished(x))
    return *stop;
  for (;;) {
    double step = direction();
    if (auto stop = search(x, step))
      return *stop;
    // Entries held at 0 on both sides of the step (s_i = 0) keep their gradient change out of y:
    // s'y is unchanged, and the memory models the free entries only (and stays as sparse as the
    // model). Not in the paper; on Fashion-MNIST shirts (l1 1e-2) it halves the iterations.
    s_.resize(x.size());
    y_.resize(x.size());
    pool_.for_chunks(x.size(), [&](Eigen::Index begin, Eigen::Index end) {
      s_.segment(begin, end - begin).setZero();
      y_.segment(begin, end - begin).setZero();
      for (const auto i : free_[static_cast<std::size_t>(begin / vector_pool::chunk)]) {
        s_[i] = xt_[i] - x[i];
        y_[i] = c_[i] > 0 && x[i] == 0 && xt_[i] == 0 ? 0.0 : gt_[i] - g_[i];
      }
    });
    const double sy = bfgs_.stage(s_, y_, &free_);
    x.swap(xt_);
    g_.swap(gt_);
    fx_ = ft_;
    record(x);
    if (auto stop = log_.accept(fx_, pg_, step))
      return *stop;
    // f is convex on the paths this takes for the linear models, but a network's may not be: a
    // pair without positive curvature would break the matrix, so it is left out.
    const bool kept = sy > 0;
    if (auto stop = finished(x)) {
      // A run with a higher limit would add this pair and go on: hand out that state (and keep
      // the pair, the newest a caller may ask for).
      if (kept)
        bfgs_.commit();
      if (auto failed = hand_out(x, kept, true))
        return *failed;
      return *stop;
    }
    if (kept)
      bfgs_.commit();
    if (auto failed = hand_out(x, kept, false))
      return *failed;
  }
}

} // namespace

namespace detail {

/// The options' and penalty's misfits for a problem of n entries, as OWL-QN's failure.
result<void> check_owlqn(const lbfgs_options& options, const Eigen::VectorXd& l1, Eigen::Index n) {
  if (auto ok = check_options(options, n); !ok)
    return ok.error().with_context("invalid OWL-QN options");
  if (options.lower || options.upper)
    return fail_invalid("invalid OWL-QN options: an L1 term takes no bounds");
  if (auto ok = check_penalty(l1, n); !ok)
    return ok.error().with_context("invalid OWL-QN options");
  return {};
}

} // namespace detail

result<run_result> minimize_owlqn_erased(const evaluate_function& f, Eigen::VectorXd& theta,
                                         const lbfgs_options& options, const Eigen::VectorXd& l1,
                                         const iteration_hook& hook, const lbfgs_session& session) {
  return detail::minimize_owlqn_keeping_newest(f, theta, options, l1, hook, session, nullptr);
}

result<run_result> detail::minimize_owlqn_keeping_newest(const evaluate_function& f, Eigen::VectorXd& theta,
                                                         const lbfgs_options& options, const Eigen::VectorXd& l1,
                                                         const iteration_hook& hook, const lbfgs_session& session,
                                                         sparse_pair* newest) {
  if (auto ok = detail::check_owlqn(options, l1, theta.size()); !ok)
    return ok.error();
  if (session.resume) {
    const auto& saved = *session.resume;
    auto ok = check_state(saved, theta.size(), options, true);  // a shrinking run's states hold one at most
    for (std::size_t i = 0; ok && i < saved.s.size(); ++i)
      if (!(sparse_bfgs::curvature(saved.s[i], saved.y[i]) > 0))  // summed as the loop sums it
        ok = fail_invalid("a correction pair has no positive curvature");
    if (!ok)
      return ok.error().with_context("invalid OWL-QN options: the state to resume does not fit");
  }
  run_log log{hook, options.past, options.delta};
  owlqn_loop loop{f, log, options, l1, session};
  auto stop = loop.run(theta);
  if (newest)
    loop.memory().newest(newest->index, newest->s, newest->y);
  return log.finish(std::move(stop));
}

} // namespace shardopt::optimizer

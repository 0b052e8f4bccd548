#include "apps/run/progress.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardopt::apps {

nlohmann::json metrics_row(const optimizer::iteration_info& info) {
  nlohmann::json row{{"iteration", info.iteration},   {"objective", info.f},
                     {"grad_norm", info.grad_norm},   {"grad_norm_inf", info.grad_norm_inf},
                     {"step", info.step},             {"evaluations", info.evaluations},
                     {"hessian_products", info.products}, {"seconds", info.seconds}};
  if (info.nonzeros >= 0)
    row["nonzero_weights"] = info.nonzeros;
  return row;
}

progress_log::progress_log(bool quiet, double interval_seconds)
  : quiet_(quiet), interval_(interval_seconds) {}

result<void> progress_log::open_metrics(const std::string& path, int resumed_at) {
  return metrics_.open(path, "iteration", resumed_at);
}

result<void> progress_log::metrics_written() const {
  return metrics_.written();
}

bool progress_log::operator()(const optimizer::iteration_info& info) {
  const auto row = metrics_row(info);
  metrics_.write(row, "iteration " + std::to_string(info.iteration), quiet_);
  const auto now = std::chrono::steady_clock::now();
  if (info.iteration <= 1 || now - last_print_ >= interval_) {
    print(info);
    last_print_ = now;
    pending_.reset();
  } else {
    pending_ = info;
  }
  return !follow_ || follow_(row);
}

void progress_log::flush() {
  if (pending_)
    print(*pending_);
  pending_.reset();
}

void progress_log::print(const optimizer::iteration_info& info) {
  if (quiet_)
    return;
  if (info.products > 0)
    std::fprintf(stderr, "iter %5d  f %.10g  |g|_inf %.3e  |s| %.3g  evals %d  Hv %d  %.1fs\n",
                 info.iteration, info.f, info.grad_norm_inf, info.step, info.evaluations,
                 info.products, info.seconds);
  else if (info.nonzeros >= 0)
    std::fprintf(stderr, "iter %5d  f %.10g  |pg|_inf %.3e  step %.3g  evals %d  nnz %lld  %.1fs\n",
                 info.iteration, info.f, info.grad_norm_inf, info.step, info.evaluations,
                 static_cast<long long>(info.nonzeros), info.seconds);
  else
    std::fprintf(stderr, "iter %5d  f %.10g  |g|_inf %.3e  step %.3g  evals %d  %.1fs\n",
                 info.iteration, info.f, info.grad_norm_inf, info.step, info.evaluations,
                 info.seconds);
}

} // namespace shardopt::apps

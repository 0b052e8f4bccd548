#include "apps/progress.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace shardopt::apps {

progress_reporter::progress_reporter(bool quiet, double interval_seconds)
  : quiet_(quiet), interval_(interval_seconds) {}

result<void> progress_reporter::open_metrics(const std::string& path) {
  metrics_.open(path, std::ios::out | std::ios::trunc);
  if (!metrics_)
    return fail(path + ": cannot open the metrics file for writing");
  return {};
}

bool progress_reporter::operator()(const optimizer::iteration_info& info) {
  if (metrics_.is_open()) {
    nlohmann::json row{{"iteration", info.iteration},   {"objective", info.f},
                       {"grad_norm", info.grad_norm},   {"grad_norm_inf", info.grad_norm_inf},
                       {"step", info.step},             {"evaluations", info.evaluations},
                       {"seconds", info.seconds}};
    metrics_ << row.dump() << '\n';
    metrics_.flush();
  }
  const auto now = std::chrono::steady_clock::now();
  if (info.iteration <= 1 || now - last_print_ >= interval_) {
    print(info);
    last_print_ = now;
    pending_.reset();
  } else {
    pending_ = info;
  }
  return true;
}

void progress_reporter::flush() {
  if (pending_)
    print(*pending_);
  pending_.reset();
}

void progress_reporter::print(const optimizer::iteration_info& info) {
  if (quiet_)
    return;
  std::fprintf(stderr, "iter %5d  f %.10g  |g|_inf %.3e  step %.3g  evals %d  %.1fs\n",
               info.iteration, info.f, info.grad_norm_inf, info.step, info.evaluations,
               info.seconds);
}

} // namespace shardopt::apps

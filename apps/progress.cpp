#include "apps/progress.hpp"

#include "io/atomic_file.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardopt::apps {

nlohmann::json metrics_row(const optimizer::iteration_info& info) {
  return nlohmann::json{{"iteration", info.iteration},   {"objective", info.f},
                        {"grad_norm", info.grad_norm},   {"grad_norm_inf", info.grad_norm_inf},
                        {"step", info.step},             {"evaluations", info.evaluations},
                        {"hessian_products", info.products}, {"seconds", info.seconds}};
}

progress_reporter::progress_reporter(bool quiet, double interval_seconds)
  : quiet_(quiet), interval_(interval_seconds) {}

result<void> progress_reporter::open_metrics(const std::string& path, int resumed_at) {
  metrics_path_ = path;
  if (resumed_at > 0) {
    // Keep the rows of the iterations the resumed run will not repeat.
    std::string kept;
    std::ifstream old{path};
    for (std::string line; std::getline(old, line);) {
      const auto row = nlohmann::json::parse(line, nullptr, false);
      if (row.is_object() && row.contains("iteration") && row["iteration"].is_number_integer()
          && row["iteration"].get<int>() <= resumed_at)
        kept += line + '\n';
    }
    if (auto ok = io::write_file_atomically(path, kept); !ok)
      return ok.error();
  }
  metrics_.open(path, std::ios::out | (resumed_at > 0 ? std::ios::app : std::ios::trunc));
  if (!metrics_)
    return fail_runtime(path + ": cannot open the metrics file for writing: " + std::strerror(errno));
  return {};
}

result<void> progress_reporter::metrics_written() const {
  if (metrics_error_.empty())
    return {};
  return fail_runtime(metrics_error_);
}

bool progress_reporter::operator()(const optimizer::iteration_info& info) {
  const auto row = metrics_row(info);
  if (metrics_.is_open()) {
    metrics_ << row.dump() << '\n';
    metrics_.flush();
    if (!metrics_ && metrics_error_.empty()) {
      metrics_error_ = metrics_path_ + ": cannot write the metrics row of iteration " +
                       std::to_string(info.iteration) + ": " + std::strerror(errno);
      if (!quiet_)
        std::fprintf(stderr, "shardopt: warning: %s (training goes on)\n", metrics_error_.c_str());
    }
  }
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

void progress_reporter::flush() {
  if (pending_)
    print(*pending_);
  pending_.reset();
}

void progress_reporter::print(const optimizer::iteration_info& info) {
  if (quiet_)
    return;
  if (info.products > 0)
    std::fprintf(stderr, "iter %5d  f %.10g  |g|_inf %.3e  |s| %.3g  evals %d  Hv %d  %.1fs\n",
                 info.iteration, info.f, info.grad_norm_inf, info.step, info.evaluations,
                 info.products, info.seconds);
  else
    std::fprintf(stderr, "iter %5d  f %.10g  |g|_inf %.3e  step %.3g  evals %d  %.1fs\n",
                 info.iteration, info.f, info.grad_norm_inf, info.step, info.evaluations,
                 info.seconds);
}

} // namespace shardopt::apps

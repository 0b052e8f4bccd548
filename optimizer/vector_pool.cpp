#include "optimizer/vector_pool.hpp"

#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>
#include <atomic>
#include <vector>

namespace shardopt::optimizer {

vector_pool::vector_pool(int threads) : threads_(std::max(threads, 1)) {
  if (threads_ > 1)
    pool_ = std::make_unique<Eigen::ThreadPool>(threads_ - 1, /*allow_spinning=*/false);
}

vector_pool::~vector_pool() = default;

void vector_pool::for_chunks(Eigen::Index n, const std::function<void(Eigen::Index, Eigen::Index)>& f) {
  const Eigen::Index chunks = (n + chunk - 1) / chunk;
  const auto helpers = static_cast<int>(std::min<Eigen::Index>(threads_ - 1, chunks - 1));
  if (helpers <= 0) {
    for (Eigen::Index c = 0; c < chunks; ++c)
      f(c * chunk, std::min(n, (c + 1) * chunk));
    return;
  }
  std::atomic<Eigen::Index> next{0};
  const auto work = [&] {
    for (Eigen::Index c = next++; c < chunks; c = next++)
      f(c * chunk, std::min(n, (c + 1) * chunk));
  };
  Eigen::Barrier done(static_cast<unsigned>(helpers));
  for (int t = 0; t < helpers; ++t)
    pool_->Schedule([&] {
      work();
      done.Notify();
    });
  work();
  done.Wait();
}

double vector_pool::sum_chunks(Eigen::Index n, const std::function<double(Eigen::Index, Eigen::Index)>& f) {
  std::vector<double> parts(static_cast<std::size_t>((n + chunk - 1) / chunk), 0.0);
  for_chunks(n, [&](Eigen::Index begin, Eigen::Index end) {
    parts[static_cast<std::size_t>(begin / chunk)] = f(begin, end);
  });
  double sum = 0;
  for (const double part : parts)
    sum += part;
  return sum;
}

double vector_pool::dot(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return sum_chunks(a.size(), [&](Eigen::Index begin, Eigen::Index end) {
    return a.segment(begin, end - begin).dot(b.segment(begin, end - begin));
  });
}

} // namespace shardopt::optimizer

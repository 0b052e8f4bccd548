#include "apps/summary.hpp"

#include <cmath>
#include <cstdio>

namespace shardopt::apps {

int report_error(const std::string& message) {
  std::fprintf(stderr, "shardopt: error: %s\n", message.c_str());
  return 1;
}

void add_quality(nlohmann::json& out, const std::string& prefix, model::model_kind kind,
                 const model::quality_sums& sums) {
  if (sums.count == 0)
    return;
  const auto n = static_cast<double>(sums.count);
  const auto key = [&](const char* name) { return prefix.empty() ? std::string{name} : prefix + "_" + name; };
  if (model::is_classifier(kind))
    out[key("accuracy")] = sums.correct / n;
  else
    out[key("rmse")] = std::sqrt(sums.squared_error / n);
}

} // namespace shardopt::apps

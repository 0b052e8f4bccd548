#include "apps/run/summary.hpp"

#include "optimizer/owlqn.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace shardopt::apps {

int exit_with_error(const std::string& message) {
  std::fprintf(stderr, "shardopt: error: %s\n", message.c_str());
  return 1;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream stream{path};
  std::ostringstream text;
  text << stream.rdbuf();
  return text.str();
}

void print_summary(bool quiet, bool json, const nlohmann::json& summary) {
  if (!quiet)
    for (const char* key : {"train_accuracy", "test_accuracy", "train_rmse", "test_rmse"})
      if (summary.contains(key) && summary[key].is_number())
        std::fprintf(stderr, "%s: %.4f\n", key, summary[key].get<double>());
  if (json)
    std::cout << summary.dump() << std::endl;
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

nlohmann::json data_summary(const std::string& model, const prepared_data& data, double lambda) {
  auto out = nlohmann::json{{"model", model},
                        {"lambda", lambda},
                        {"examples", data.train_rows},
                        {"features", data.shape.features},
                        {"outputs", data.shape.outputs},
                        {"dimension", data.shape.dimension()},
                        {"architecture", model::describe(data.shape)}};
  if (data.hashing.enabled())
    out["hashing"] = io::summary_of(data.hashing);
  return out;
}

void add_qualities(nlohmann::json& out, const prepared_data& data, const model::quality_sums& train_sums,
                   const Eigen::VectorXd& theta) {
  const auto kind = data.shape.kind;
  add_quality(out, "train", kind, train_sums);
  out["nonzero_weights"] = optimizer::nonzero_penalised(theta, model::weight_mask(data.shape));
  if (!data.test) {
    out[model::is_classifier(kind) ? "test_accuracy" : "test_rmse"] = nullptr;
    return;
  }
  add_quality(out, "test", kind, model::quality(data.shape, *data.test, {0, data.test->rows()}, theta));
  out["test_examples"] = data.test->rows();
}

} // namespace shardopt::apps

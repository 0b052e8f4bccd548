#include "apps/eval.hpp"

#include "model/local_objective.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>

namespace shardopt::apps {

int run_eval(const eval_options& options) {
  auto saved = io::load_model(options.model_file);
  if (!saved) {
    std::fprintf(stderr, "shardopt: error: %s\n", saved.error().message().c_str());
    return 1;
  }
  auto data = prepare_eval_data(options.data, *saved);
  if (!data) {
    std::fprintf(stderr, "shardopt: error: %s\n", data.error().message().c_str());
    return 1;
  }
  const auto& shape = saved->shape;
  const auto rows = (*data)->rows();
  const auto sums = model::quality(shape, **data, {0, rows}, saved->theta);
  model::local_objective objective{shape, *data, saved->lambda};
  Eigen::VectorXd grad;
  const double f = rows > 0 ? objective.evaluate(saved->theta, grad) : 0.0;

  nlohmann::json out{{"model", model::to_string(shape.kind)},
                     {"examples", rows},
                     {"objective", f}};
  if (rows > 0) {
    if (model::is_classifier(shape.kind))
      out["accuracy"] = sums.correct / static_cast<double>(rows);
    else
      out["rmse"] = std::sqrt(sums.squared_error / static_cast<double>(rows));
  }
  if (options.json) {
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << "examples: " << rows << "\nobjective: " << f << '\n';
    if (out.contains("accuracy"))
      std::cout << "accuracy: " << out["accuracy"].get<double>() << '\n';
    if (out.contains("rmse"))
      std::cout << "rmse: " << out["rmse"].get<double>() << '\n';
  }
  return 0;
}

} // namespace shardopt::apps

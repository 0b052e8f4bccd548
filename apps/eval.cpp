#include "apps/eval.hpp"

#include "apps/summary.hpp"
#include "model/local_objective.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

namespace shardopt::apps {

int run_eval(const eval_options& options) {
  auto saved = io::load_model(options.model_file);
  if (!saved)
    return report_error(saved.error().message());
  auto data = prepare_eval_data(options.data, *saved);
  if (!data)
    return report_error(data.error().message());
  const auto& shape = saved->shape;
  const auto rows = (*data)->rows();
  const auto sums = model::quality(shape, **data, {0, rows}, saved->theta);
  model::local_objective objective{shape, *data, saved->lambda};
  Eigen::VectorXd grad;
  const double f = rows > 0 ? objective.evaluate(saved->theta, grad) : 0.0;

  nlohmann::json out{{"model", shape.is_network() ? std::string{"mlp"} : std::string{model::to_string(shape.kind)}},
                     {"architecture", model::describe(shape)},
                     {"examples", rows},
                     {"objective", f}};
  add_quality(out, "", shape.kind, sums);
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

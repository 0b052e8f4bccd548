#include "apps/eval.hpp"

#include "apps/summary.hpp"
#include "io/scaling.hpp"
#include "model/local_objective.hpp"
#include "optimizer/owlqn.hpp"

#include <nlohmann/json.hpp>

#include <iostream>

namespace shardopt::apps {

nlohmann::json evaluate_model(const io::saved_model& saved, std::shared_ptr<const model::dataset> data) {
  const auto& shape = saved.shape;
  const auto rows = data->rows();
  const auto sums = model::quality(shape, *data, {0, rows}, saved.theta);
  double f = 0;
  if (rows > 0) {
    model::local_objective objective{shape, std::move(data), saved.lambda};
    Eigen::VectorXd grad;
    f = objective.evaluate(saved.theta, grad);
    if (saved.l1 > 0)  // training's objective: the L1 term is the optimizer's, not the data's
      f += optimizer::l1_term(saved.theta, saved.l1 * model::weight_mask(shape));
  }
  nlohmann::json out{{"model", shape.is_network() ? std::string{"mlp"} : std::string{model::to_string(shape.kind)}},
                     {"architecture", model::describe(shape)},
                     {"examples", rows},
                     {"objective", f}};
  add_quality(out, "", shape.kind, sums);
  return out;
}

result<Eigen::VectorXd> predict(const io::saved_model& saved, io::raw_dataset raw) {
  if (auto ok = io::match_features(raw, saved.shape.features, "the model"); !ok)
    return ok.error();
  if (auto ok = io::apply_scaling(saved.scaling, raw); !ok)
    return ok.error();
  const auto& data = raw.data;
  const Eigen::MatrixXd z = model::scores(saved.shape, data, {0, data.rows()}, saved.theta);
  const auto& classes = saved.labels.classes;
  Eigen::VectorXd out(z.rows());
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    if (!model::is_classifier(saved.shape.kind)) {
      out(i) = z(i, 0);
    } else if (z.cols() == 1) {  // binary: the sign, as model::quality decides it
      out(i) = classes[z(i, 0) >= 0 ? 1 : 0];
    } else {
      Eigen::Index best = 0;
      z.row(i).maxCoeff(&best);
      out(i) = classes[static_cast<std::size_t>(best)];
    }
  }
  return out;
}

int run_eval(const eval_options& options) {
  auto saved = io::load_model(options.model_file);
  if (!saved)
    return exit_with_error(saved.error().message());
  auto data = prepare_eval_data(options.data, *saved);
  if (!data)
    return exit_with_error(data.error().message());
  const auto out = evaluate_model(*saved, *data);
  const auto rows = out["examples"].get<std::int64_t>();
  const auto f = out["objective"].get<double>();
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

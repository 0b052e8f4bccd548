#include "apps/commands/eval.hpp"

#include "apps/run/output_paths.hpp"
#include "apps/run/summary.hpp"
#include "io/atomic_file.hpp"
#include "io/scaling.hpp"
#include "model/local_objective.hpp"
#include "optimizer/owlqn.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

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

result<Eigen::MatrixXd> decision_values(const io::saved_model& saved, io::raw_dataset raw) {
  if (auto ok = io::match_features(raw, saved.shape.features, "the model"); !ok)
    return ok.error();
  if (auto ok = io::apply_scaling(saved.scaling, raw); !ok)
    return ok.error();
  const auto& data = raw.data;
  return Eigen::MatrixXd{model::scores(saved.shape, data, {0, data.rows()}, saved.theta)};
}

Eigen::MatrixXd probabilities(const model::model_shape& shape, const Eigen::MatrixXd& z) {
  const bool softmax_output = shape.kind == model::model_kind::softmax;  // networks with cross-entropy too
  if (shape.kind == model::model_kind::logistic && z.cols() == 1) {
    Eigen::MatrixXd p(z.rows(), 2);
    for (Eigen::Index i = 0; i < z.rows(); ++i) {
      const double z_i = z(i, 0);  // stable both ways: exp of a non-positive number only
      const double e = std::exp(-std::abs(z_i));
      const double positive = z_i >= 0 ? 1 / (1 + e) : e / (1 + e);
      p(i, 1) = positive;
      p(i, 0) = z_i >= 0 ? e / (1 + e) : 1 / (1 + e);
    }
    return p;
  }
  if (!softmax_output)
    return {};
  Eigen::MatrixXd p(z.rows(), z.cols());
  for (Eigen::Index i = 0; i < z.rows(); ++i) {
    const double top = z.row(i).maxCoeff();
    double total = 0;
    for (Eigen::Index k = 0; k < z.cols(); ++k)
      total += p(i, k) = std::exp(z(i, k) - top);
    p.row(i) /= total;
  }
  return p;
}

result<Eigen::VectorXd> predict(const io::saved_model& saved, io::raw_dataset raw) {
  auto values = decision_values(saved, std::move(raw));
  if (!values)
    return values.error();
  const Eigen::MatrixXd& z = *values;
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

namespace {

/// A number that reads back to the same double.
std::string exact(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

/// Writes each row's prediction and its probabilities (or an SVM's scores) as CSV to `path`.
result<void> write_predictions(const std::string& path, const io::saved_model& saved, const model::dataset& data) {
  const Eigen::MatrixXd z = model::scores(saved.shape, data, {0, data.rows()}, saved.theta);
  const Eigen::MatrixXd p = probabilities(saved.shape, z);
  const auto& classes = saved.labels.classes;
  const bool classifier = model::is_classifier(saved.shape.kind);
  return io::stream_file_atomically(path, [&](std::ostream& out) {
    out << "prediction";
    const bool scores = classifier && p.size() == 0;  // an SVM: its decision values
    const auto columns = p.size() > 0 ? p.cols() : scores ? z.cols() : 0;
    for (Eigen::Index k = 0; k < columns; ++k) {
      const auto name = z.cols() == 1 && scores ? std::string{"score"}
                                               : (scores ? "score_" : "p_") + exact(classes[static_cast<std::size_t>(k)]);
      out << ',' << name;
    }
    out << '\n';
    for (Eigen::Index i = 0; i < z.rows(); ++i) {
      if (!classifier) {
        out << exact(z(i, 0)) << '\n';
        continue;
      }
      Eigen::Index best = 0;
      if (z.cols() == 1)
        best = z(i, 0) >= 0 ? 1 : 0;
      else
        z.row(i).maxCoeff(&best);
      out << exact(classes[static_cast<std::size_t>(best)]);
      for (Eigen::Index k = 0; k < columns; ++k)
        out << ',' << exact(p.size() > 0 ? p(i, k) : z(i, k));
      out << '\n';
    }
  });
}

} // namespace

int run_eval(const eval_options& options) {
  if (!options.predictions.empty())
    if (auto ok = check_output_file("--predictions", options.predictions); !ok)
      return exit_with_error(ok.error().message());
  auto saved = io::load_model(options.model_file);
  if (!saved)
    return exit_with_error(saved.error().message());
  auto data = prepare_eval_data(options.data, *saved);
  if (!data)
    return exit_with_error(data.error().message());
  if (!options.predictions.empty())
    if (auto ok = write_predictions(options.predictions, *saved, **data); !ok)
      return exit_with_error("--predictions: " + ok.error().message());
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

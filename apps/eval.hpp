#pragma once

#include "apps/data.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace shardopt::apps {

/// Everything `shardopt eval` takes.
struct eval_options {
  std::string model_file;
  data_options data;
  bool json = false;
};

/// A saved model's quality on prepared data: {"model", "architecture", "examples", "objective",
/// "accuracy" (classifiers) or "rmse"}, what `eval --json` prints.
nlohmann::json evaluate_model(const io::saved_model& saved, std::shared_ptr<const model::dataset> data);

/// A saved model's predictions for raw features (scaled as its training data was; labels unused):
/// the class as the training labels spelled it, or the real value for least squares. Errors name a
/// feature count that does not match the model's.
result<Eigen::VectorXd> predict(const io::saved_model& saved, io::raw_dataset raw);

/// Loads a saved model, prepares data as the model's training data was, prints accuracy (or RMSE)
/// and the objective's loss on that data. Returns the process exit code.
int run_eval(const eval_options& options);

} // namespace shardopt::apps

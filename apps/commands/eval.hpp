#pragma once

#include "apps/run/data.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace shardopt::apps {

/// Everything `shardopt eval` takes.
struct eval_options {
  std::string model_file;
  data_options data;
  bool json = false;
  std::string predictions;  ///< a CSV file of each row's prediction and probabilities (or scores)
};

/// A saved model's quality on prepared data: {"model", "architecture", "examples", "objective",
/// "accuracy" (classifiers) or "rmse"}, what `eval --json` prints.
nlohmann::json evaluate_model(const io::saved_model& saved, std::shared_ptr<const model::dataset> data);

/// A saved model's predictions for raw features (scaled as its training data was; labels unused):
/// the class as the training labels spelled it, or the real value for least squares. Errors name a
/// feature count that does not match the model's.
result<Eigen::VectorXd> predict(const io::saved_model& saved, io::raw_dataset raw);

/// A saved model's decision values for raw features (scaled as its training data was; labels
/// unused): rows x outputs, one column for a binary model (positive: the second class) and for least
/// squares. Errors name a feature count that does not match the model's.
result<Eigen::MatrixXd> decision_values(const io::saved_model& saved, io::raw_dataset raw);

/// Class probabilities from decision values `z`, rows x classes in the model's class order: the
/// logistic function for a logistic model (two columns), softmax rows for softmax and networks with
/// a softmax output. Empty for least squares and SVMs (whose scores are no probabilities).
Eigen::MatrixXd probabilities(const model::model_shape& shape, const Eigen::MatrixXd& z);

/// Loads a saved model, prepares data as the model's training data was, prints accuracy (or RMSE)
/// and the objective's loss on that data; with `predictions`, writes a CSV of each row's prediction
/// and its class probabilities (or SVM scores). Returns the process exit code.
int run_eval(const eval_options& options);

} // namespace shardopt::apps

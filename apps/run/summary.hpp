#pragma once

// What a finished command reports: its summary (built the same way in both training modes), its
// errors (one line and exit code 1), and the results files its readers load.

#include "apps/run/data.hpp"
#include "model/linear_model.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace shardopt::apps {

/// Prints "shardopt: error: <message>" on stderr and returns exit code 1.
int exit_with_error(const std::string& message);

/// The whole text of a results file (status.json, summary.json, metrics.jsonl, ...); empty when it
/// is missing or unreadable, which its readers treat as "not written yet".
std::string read_text(const std::filesystem::path& path);

/// A finished `train`'s report: the accuracies (or RMSEs) on stderr unless quiet, and the summary
/// on stdout as one JSON object with `json`.
void print_summary(bool quiet, bool json, const nlohmann::json& summary);

/// Adds `<prefix>_accuracy` (classifiers) or `<prefix>_rmse` (least squares; without a prefix just
/// `accuracy` or `rmse`) from quality sums to a
/// JSON summary; nothing when the sums cover no examples.
void add_quality(nlohmann::json& out, const std::string& prefix, model::model_kind kind,
                 const model::quality_sums& sums);

/// What every training summary says of its model and data, in both modes: model, lambda,
/// examples, features, outputs, dimension, architecture.
nlohmann::json data_summary(const std::string& model, const prepared_data& data, double lambda);

/// Adds the training quality (`train_sums`), the weights of theta that are not 0
/// (`nonzero_weights`), and the test set's quality at theta (`test_accuracy` or `test_rmse`, and
/// `test_examples`), or a null test figure when there is no test set.
void add_qualities(nlohmann::json& out, const prepared_data& data, const model::quality_sums& train_sums,
                   const Eigen::VectorXd& theta);

} // namespace shardopt::apps

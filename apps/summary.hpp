#pragma once

#include "model/linear_model.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace shardopt::apps {

/// Prints "shardopt: error: <message>" on stderr and returns exit code 1.
int report_error(const std::string& message);

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

} // namespace shardopt::apps

#pragma once

#include "apps/data.hpp"

#include <string>

namespace shardopt::apps {

/// Everything `shardopt eval` takes.
struct eval_options {
  std::string model_file;
  data_options data;
  bool json = false;
};

/// Loads a saved model, prepares data as the model's training data was, prints accuracy (or RMSE)
/// and the objective's loss on that data. Returns the process exit code.
int run_eval(const eval_options& options);

} // namespace shardopt::apps

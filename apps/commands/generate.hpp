#pragma once

#include "io/synthetic.hpp"

#include <string>

namespace shardopt::apps {

/// `shardopt generate`'s options: the dataset (io/synthetic.hpp) and where it goes.
struct generate_options {
  io::synthetic_spec spec;
  std::string model = "logistic";  ///< linear, logistic or softmax
  std::string output;
  bool quiet = false;
  bool nonzeros_given = false;  ///< --nonzeros was given; else at most --features (40 by default)
};

/// Writes a synthetic LIBSVM dataset with a planted model. Returns the process exit code.
int run_generate(const generate_options& options);

} // namespace shardopt::apps

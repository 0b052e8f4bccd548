#pragma once
// Keyword arguments (the Python module's `shardopt.train(lam=1e-4, max_iter=50, ...)`) as options
// of `shardopt train`, each checked by the same definition as the command line and TOML files.

#include "apps/commands/train/train.hpp"
#include "base/result.hpp"

#include <toml.hpp>

#include <string>
#include <vector>

namespace shardopt::apps {

/// One keyword argument: an option's long name, with underscores or dashes ("max_iter"), and its
/// value (a boolean for flags; an integer, a float or a string otherwise).
struct keyword {
  std::string name;
  toml::value value;
};

/// The option name a keyword stands for: underscores become dashes.
std::string option_name(const std::string& keyword_name);

/// Whether `shardopt train` has a (non-positional) option of this keyword's name.
bool is_train_option(const std::string& keyword_name);

/// The `train` options the keywords ask for, every other option at its default. Errors name the
/// keyword: "option 'lambda': ...", "unknown option 'foo' (`shardopt train` has no option --foo)".
result<train_options> train_options_from(const std::vector<keyword>& keywords);

} // namespace shardopt::apps

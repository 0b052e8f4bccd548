#pragma once
// Internal to apps: what running a sweep needs from its plan besides the runs (experiments.hpp
// declares `plan_sweep` and `run_arguments`, implemented in sweep_plan.cpp).

#include "apps/experiments/experiments.hpp"
#include "base/result.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>

namespace shardopt::apps {

/// A sweep file's base configuration (every key but [sweep]) as key -> TOML literal, and its seed.
struct sweep_base {
  std::map<std::string, std::string> literals;
  std::int64_t seed = 0;
};

/// Reads the base of a sweep file through the checked reader; errors name the file and line.
result<sweep_base> read_sweep_base(const std::string& file);

/// A TOML literal ("1e-3", "\"adam\"") as JSON.
nlohmann::json json_of_literal(const std::string& literal);

/// A configuration's text: one `key = literal` line per entry.
std::string config_text(const std::map<std::string, std::string>& literals);

} // namespace shardopt::apps

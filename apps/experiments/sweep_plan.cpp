// Sweeps, planned: a base TOML configuration and its [sweep] table (grid and list) become the runs,
// each checked against the command's options before anything starts.

#include "apps/experiments/sweep_plan.hpp"

#include "apps/options/config_file.hpp"

#include <toml.hpp>

#include <map>
#include <set>
#include <sstream>

namespace shardopt::apps {

namespace {

using document = toml::basic_value<toml::discard_comments, std::map, std::vector>;
using json = nlohmann::json;

/// A scalar TOML value as JSON (strings, numbers, booleans; anything else as its TOML text).
json json_of(const document& value) {
  if (value.is_string())
    return value.as_string().str;
  if (value.is_integer())
    return value.as_integer();
  if (value.is_floating())
    return value.as_floating();
  if (value.is_boolean())
    return value.as_boolean();
  return toml::format(value);
}

/// A value as a fragment of a folder name.
std::string name_part(const std::string& literal) {
  std::string out;
  for (char c : literal)
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == '_')
      out += c;
  return out.substr(0, 24);
}

std::string line_of(const std::string& file, const document& value) {
  return file + ":" + std::to_string(value.location().line());
}

/// The base configuration (every key but [sweep]) as key -> TOML literal.
std::map<std::string, std::string> base_literals(const document& doc) {
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : doc.as_table())
    if (key != "sweep")
      out[key] = toml::format(value);
  return out;
}

/// Checks one override (key = literal) against the options, reporting `location` on failure.
result<void> check_override(const std::string& key, const std::string& literal, const std::string& command,
                            const std::string& location) {
  auto args = config_text_arguments(key + " = " + literal + "\n", "sweep", command);
  if (!args) {
    auto message = args.error().message();
    if (message.rfind("sweep:1: ", 0) == 0)
      message = message.substr(9);
    return fail_invalid(location + ": " + message);
  }
  return {};
}

/// Reads and parses a configuration file through the checked reader.
result<document> parse_config(const std::string& file) {
  auto text = read_config_text(file);
  if (!text)
    return text.error();
  try {
    std::istringstream stream{*text};
    return toml::parse<toml::discard_comments, std::map, std::vector>(stream, file);
  } catch (const std::exception& e) {
    return fail_invalid(std::string{e.what()});
  }
}

} // namespace

nlohmann::json json_of_literal(const std::string& literal) {
  std::istringstream stream{"v = " + literal};
  const auto parsed = toml::parse<toml::discard_comments, std::map, std::vector>(stream, "literal");
  return json_of(parsed.as_table().at("v"));
}

std::string config_text(const std::map<std::string, std::string>& literals) {
  std::string text;
  for (const auto& [key, literal] : literals)
    text += key + " = " + literal + "\n";
  return text;
}

result<sweep_base> read_sweep_base(const std::string& file) {
  auto doc = parse_config(file);
  if (!doc)
    return doc.error();
  sweep_base base;
  base.literals = base_literals(*doc);
  if (doc->contains("seed") && doc->as_table().at("seed").is_integer())
    base.seed = doc->as_table().at("seed").as_integer();
  return base;
}

result<std::vector<std::string>> run_arguments(const std::string& file, const std::vector<std::string>& flags) {
  auto command = config_command(file);
  if (!command)
    return command.error();
  auto args = config_arguments(file, *command, "sweep");
  if (!args)
    return args.error();
  std::vector<std::string> out{*command};
  out.insert(out.end(), args->begin(), args->end());
  out.insert(out.end(), flags.begin(), flags.end());
  return out;
}

result<std::vector<planned_run>> plan_sweep(const std::string& file, int repeat_override) {
  auto parsed = parse_config(file);
  if (!parsed)
    return parsed.error();
  const auto& doc = *parsed;
  auto command = config_command(file);
  if (!command)
    return command.error();
  // The base config must be valid on its own.
  if (auto base = config_arguments(file, *command, "sweep"); !base)
    return base.error();
  if (!doc.contains("sweep") || !doc.as_table().at("sweep").is_table())
    return fail_invalid(file + ": no [sweep] table (a base config runs with `shardopt run`)");
  const auto& sweep = doc.as_table().at("sweep");
  std::vector<std::vector<std::pair<std::string, std::string>>> variants{{}};
  int repeat = 1;
  for (const auto& [key, value] : sweep.as_table()) {
    if (key == "repeat") {
      if (!value.is_integer() || value.as_integer() < 1)
        return fail_invalid(line_of(file, value) + ": sweep.repeat must be a positive integer");
      repeat = static_cast<int>(value.as_integer());
    } else if (key == "list") {
      if (!value.is_array() || value.as_array().empty())
        return fail_invalid(line_of(file, value) + ": sweep.list must be a non-empty array of tables");
      variants.clear();
      for (const auto& item : value.as_array()) {
        if (!item.is_table())
          return fail_invalid(line_of(file, item) + ": sweep.list entries must be tables, e.g. { lambda = 1e-4 }");
        std::vector<std::pair<std::string, std::string>> overrides;
        for (const auto& [k, v] : item.as_table()) {
          const auto literal = toml::format(v);
          if (auto ok = check_override(k, literal, *command, line_of(file, item)); !ok)
            return ok.error();
          overrides.emplace_back(k, literal);
        }
        variants.push_back(overrides);
      }
    } else if (key != "grid") {
      return fail_invalid(line_of(file, value) + ": unknown key 'sweep." + key + "' (expected grid, list or repeat)");
    }
  }
  if (sweep.contains("grid")) {
    const auto& grid = sweep.as_table().at("grid");
    if (!grid.is_table())
      return fail_invalid(line_of(file, grid) + ": sweep.grid must be a table of arrays, e.g. { lambda = [1e-5, 1e-4] }");
    for (const auto& [key, values] : grid.as_table()) {
      if (!values.is_array() || values.as_array().empty())
        return fail_invalid(line_of(file, values) + ": sweep.grid." + key + " must be a non-empty array");
      std::vector<std::vector<std::pair<std::string, std::string>>> product;
      for (const auto& variant : variants)
        for (const auto& v : values.as_array()) {
          const auto literal = toml::format(v);
          if (auto ok = check_override(key, literal, *command, line_of(file, values)); !ok)
            return ok.error();
          auto extended = variant;
          extended.emplace_back(key, literal);
          product.push_back(extended);
        }
      variants = std::move(product);
    }
  }
  if (repeat_override > 0)
    repeat = repeat_override;
  // Name runs by the keys whose values differ between variations (all keys when there is one).
  std::set<std::string> varying;
  for (const auto& overrides : variants)
    for (const auto& [key, literal] : overrides)
      for (const auto& other : variants) {
        const auto it = std::find_if(other.begin(), other.end(), [&](const auto& o) { return o.first == key; });
        if (it == other.end() || it->second != literal)
          varying.insert(key);
      }
  std::vector<planned_run> plan;
  for (const auto& overrides : variants)
    for (int r = 0; r < repeat; ++r) {
      planned_run run;
      char number[16];
      std::snprintf(number, sizeof number, "%03zu", plan.size());
      run.name = number;
      for (const auto& [key, literal] : overrides)
        if (varying.count(key) || varying.empty())
          run.name += "-" + key + "=" + name_part(json_of_literal(literal).dump());
      if (run.name.size() > 96)
        run.name = run.name.substr(0, 96);
      if (repeat > 1)
        run.name += "-r" + std::to_string(r);
      run.overrides = overrides;
      run.repeat = r;
      plan.push_back(run);
    }
  return plan;
}

} // namespace shardopt::apps

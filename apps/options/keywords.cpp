#include "apps/options/keywords.hpp"

#include "apps/options/cli.hpp"
#include "apps/options/config_file.hpp"

#include <algorithm>

namespace shardopt::apps {

std::string option_name(const std::string& keyword_name) {
  auto name = keyword_name;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

bool is_train_option(const std::string& keyword_name) {
  const auto* option =
    thread_parser().app().get_subcommand("train")->get_option_no_throw("--" + option_name(keyword_name));
  return option && !option->get_positional();
}

result<train_options> train_options_from(const std::vector<keyword>& keywords) {
  std::vector<std::string> args{"train"};
  for (const auto& k : keywords) {
    auto converted = option_arguments("train", option_name(k.name), k.value, "option");
    if (!converted)
      return converted.error();
    args.insert(args.end(), converted->begin(), converted->end());
  }
  auto& parser = thread_parser();
  try {
    parser.parse(args);
  } catch (const CLI::ParseError& e) {
    return fail_invalid(e.what());
  }
  return parser.values().train;
}

} // namespace shardopt::apps

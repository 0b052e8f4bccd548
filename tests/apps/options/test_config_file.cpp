// Config files: every train and ps-task option round-trips through one, its values land in the
// options and command-line flags override them, and unknown keys, wrong types and TOML syntax the
// parser cannot take are refused naming the file and the line.

#include "apps/options/cli.hpp"
#include "apps/options/config_file.hpp"
#include "apps/options/keywords.hpp"
#include "apps/experiments/experiments.hpp"
#include "support/process.hpp"
#include "support/small_disk.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

using namespace shardopt::test;
using json = nlohmann::json;
namespace apps = shardopt::apps;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

/// Parses `args` (command first) with the real option definitions.
std::vector<std::string> parse_into(CLI::App& app, apps::command_line& into, std::vector<std::string> args) {
  apps::define_commands(app, into);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  return args;
}

} // namespace

TEST_CASE("every option of train and ps-task round-trips through a config file") {
  for (const std::string command : {"train", "ps-task"}) {
    CAPTURE(command);
    apps::command_line defaults;
    CLI::App definitions;
    apps::define_commands(definitions, defaults);
    std::size_t checked = 0;
    for (const auto* option : definitions.get_subcommand(command)->get_options()) {
      const auto name = option->get_single_name();
      if (option->get_positional() || name == "help" || option->get_lnames().empty())
        continue;
      const auto& key = option->get_lnames().front();
      CAPTURE(key);
      const bool flag = option->get_expected_max() == 0;
      // A value of the option's kind: its default when it has one, else a number every option takes.
      std::string value = option->get_default_str().empty() ? "7" : option->get_default_str();
      if (key == "slow-worker")
        value = "1:2";
      const std::string line = flag ? key + " = true" : key + " = \"" + value + "\"";
      auto args = apps::config_text_arguments("# config\n" + line + "\n", "c.toml", command);
      REQUIRE_MESSAGE(args.ok(), args.error().message());
      std::vector<std::string> full{command};
      if (command == "ps-task")  // the required options first; the config's value comes last and wins
        full.insert(full.end(), {"--ps_hosts", "a:1", "--worker_hosts", "b:2", "--job_name", "ps", "--task_index", "0"});
      full.insert(full.end(), args->begin(), args->end());
      apps::command_line parsed;
      CLI::App app;
      parse_into(app, parsed, full);
      const auto* seen = app.get_subcommand(command)->get_option("--" + key);
      CHECK(seen->count() >= 1);
      if (!flag)
        CHECK(seen->results().back() == value);
      ++checked;
    }
    CHECK(checked > (command == "train" ? 50u : 45u));
  }
}

TEST_CASE("config values land in the options, and command-line flags override the file") {
  temp_dir dir;
  const auto file = (dir.path() / "run.toml").string();
  write_file(file, "model = \"logistic\"\nlambda = 0.25\nmax-iter = 17\nstandardize = true\nquiet = false\n");
  auto args = apps::run_arguments(file, {"--lambda", "0.5"});
  REQUIRE(args.ok());
  apps::command_line parsed;
  CLI::App app;
  parse_into(app, parsed, *args);
  CHECK(parsed.train.model == "logistic");
  CHECK(parsed.train.lambda == 0.5);
  CHECK(parsed.train.lbfgs.max_iterations == 17);
  CHECK(parsed.train.data.standardize);
  CHECK(!parsed.train.quiet);
}

TEST_CASE("unknown keys, wrong types and TOML syntax errors name the file and line") {
  auto error_of = [](const std::string& text) {
    auto args = apps::config_text_arguments(text, "exp.toml", "train");
    REQUIRE(!args.ok());
    return args.error().message();
  };
  CHECK(error_of("model = \"softmax\"\n\nlamda = 3\n").find("exp.toml:3: unknown key 'lamda'") != std::string::npos);
  CHECK(error_of("max-iter = \"many\"\n").find("exp.toml:1: key 'max-iter'") != std::string::npos);
  CHECK(error_of("lambda = 0.1\njson = 3\n").find("exp.toml:2: key 'json'") != std::string::npos);
  CHECK(error_of("lambda = true\n").find("exp.toml:1: key 'lambda'") != std::string::npos);
  CHECK(error_of("shards = [1, 2]\n").find("exp.toml:1: key 'shards'") != std::string::npos);
  CHECK(error_of("mode = \"fast\"\n").find("exp.toml:1: key 'mode'") != std::string::npos);
  const auto syntax = error_of("model = \"softmax\"\nlambda = \n");
  CHECK(syntax.find("exp.toml") != std::string::npos);
  CHECK(syntax.find(" 2 |") != std::string::npos);
  temp_dir dir;
  write_file(dir.path() / "s.toml", "model = \"softmax\"\n[sweep]\ngrid = { lambda = [0.1] }\nrepeats = 2\n");
  auto plan = apps::plan_sweep((dir.path() / "s.toml").string(), 0);
  REQUIRE(!plan.ok());
  CHECK(plan.error().message().find("s.toml:4: unknown key 'sweep.repeats'") != std::string::npos);
  write_file(dir.path() / "t.toml", "model = \"softmax\"\n[sweep]\ngrid = { lamda = [0.1] }\n");
  plan = apps::plan_sweep((dir.path() / "t.toml").string(), 0);
  REQUIRE(!plan.ok());
  CHECK(plan.error().message().find("t.toml:3: unknown key 'lamda'") != std::string::npos);
}

TEST_CASE("configs the TOML parser cannot take are refused with the file and line (found by fuzzing)") {
  auto error_of = [](const std::string& text) {
    auto args = apps::config_text_arguments(text, "exp.toml", "train");
    REQUIRE(!args.ok());
    return args.error().message();
  };
  // Invalid UTF-8 in a literal string made toml11 3.7 read out of bounds (and abort where its
  // assertions are on): fuzz/regressions/fuzz_toml_config. The whole text must be UTF-8.
  CHECK(error_of("model = 'x\xff'\n") == "exp.toml:1: not valid UTF-8 (a TOML file must be)");
  CHECK(error_of("model = \"softmax\"\ndata = '''a\nb\xc0\xaf'''\n") ==
        "exp.toml:3: not valid UTF-8 (a TOML file must be)");
  // Deep nesting overflowed toml11's recursive parser; long dotted keys took seconds.
  const std::string deep = "nested more than 32 levels deep (arrays, inline tables and dotted keys)";
  CHECK(error_of("lower = " + std::string(20000, '[') + std::string(20000, ']') + "\n")
          .find("exp.toml:1: " + deep) == 0);
  std::string tables = "\nlower = 1\nx = ";
  for (int i = 0; i < 5000; ++i)
    tables += "{a=";
  CHECK(error_of(tables + "1" + std::string(5000, '}') + "\n").find("exp.toml:3: " + deep) == 0);
  std::string key = "a";
  for (int i = 0; i < 30000; ++i)
    key += ".a";
  CHECK(error_of(key + " = 1\n").find("exp.toml:1: " + deep) == 0);
  CHECK(error_of("[" + key + "]\n").find("exp.toml:1: " + deep) == 0);
  // What real files hold passes: UTF-8 text, brackets in strings and comments, 32 levels.
  const std::string brackets(40, '['), braces(40, '{');
  auto args = apps::config_text_arguments("# " + brackets + braces + "\n"
                                          "data = \"donn\xc3\xa9" "es/" + brackets + ".csv\" # ]]\n"
                                          "metrics = '''\n" + braces + "'''\n"
                                          "save = \"a\\\"" + brackets + "\"\n",
                                          "exp.toml", "train");
  REQUIRE_MESSAGE(args.ok(), args.error().message());
  CHECK(args->size() == 6);
  CHECK(error_of("x = " + std::string(32, '[') + std::string(32, ']') + "\n").find("unknown key 'x'") !=
        std::string::npos);
  // Files go through the same check: `shardopt run` and `shardopt sweep`.
  temp_dir dir;
  const auto file = (dir.path() / "deep.toml").string();
  write_file(file, "model = \"softmax\"\n[sweep]\ngrid = { lambda = " + std::string(100, '[') + "\n");
  auto run_args = apps::run_arguments(file, {});
  REQUIRE(!run_args.ok());
  CHECK(run_args.error().message().find(file + ":3: " + deep) == 0);
  auto plan = apps::plan_sweep(file, 0);
  REQUIRE(!plan.ok());
  CHECK(plan.error().message().find(file + ":3: " + deep) == 0);
}

TEST_CASE("the reused parser starts every parse where a fresh definition starts, also after a refused one") {
  // Keywords and configuration keys are parsed by one definition per thread (apps::thread_parser):
  // no value may outlive the parse that set it.
  apps::command_line fresh;
  CLI::App definitions;
  apps::define_commands(definitions, fresh);
  const auto defaults = fresh.train;
  REQUIRE(defaults.lambda != 0.5);
  REQUIRE(!defaults.no_bias);

  const auto first = apps::train_options_from(
    {{"lambda", toml::value(0.5)}, {"l1", toml::value(1e-3)}, {"hidden", toml::value("32,16")},
     {"no_bias", toml::value(true)}, {"categorical", toml::value("word")}, {"max_iter", toml::value(7)}});
  REQUIRE(first);
  CHECK(first->lambda == 0.5);
  CHECK(first->l1 == 1e-3);
  CHECK(first->hidden == "32,16");
  CHECK(first->no_bias);
  CHECK(first->data.categorical == std::vector<std::string>{"word"});

  const auto second = apps::train_options_from({{"max_iter", toml::value(3)}});
  REQUIRE(second);
  CHECK(second->lambda == defaults.lambda);
  CHECK(second->l1 == defaults.l1);
  CHECK(second->hidden == defaults.hidden);
  CHECK(second->no_bias == defaults.no_bias);
  CHECK(second->data.categorical == defaults.data.categorical);
  CHECK(second->lbfgs.max_iterations == 3);

  // Refused midway: the value before the bad one was written, and must not stay.
  auto& parser = apps::thread_parser();
  CHECK_THROWS_AS(parser.parse({"train", "--lambda", "0.25", "--max-iter", "many"}), CLI::ParseError);
  CHECK(!apps::train_options_from({{"shards", toml::value("two")}}));
  const auto third = apps::train_options_from({});
  REQUIRE(third);
  CHECK(third->lambda == defaults.lambda);
  CHECK(third->lbfgs.max_iterations == defaults.lbfgs.max_iterations);
  CHECK(third->shards == defaults.shards);

  // Choices, and a flag an each() callback sets, in another command.
  parser.parse({"train", "--mode", "ps", "--solver", "lbfgs"});
  CHECK(parser.values().train.mode == apps::train_mode::ps);
  CHECK(parser.values().train.solver == apps::solver_kind::lbfgs);
  parser.parse({"train"});
  CHECK(parser.values().train.mode == defaults.mode);
  CHECK(parser.values().train.solver == defaults.solver);
  parser.parse({"generate", "-o", "x.svm", "--nonzeros", "5"});
  CHECK(parser.values().generate.nonzeros_given);
  parser.parse({"generate", "-o", "x.svm"});
  CHECK(!parser.values().generate.nonzeros_given);
  CHECK(parser.values().generate.spec.nonzeros == fresh.generate.spec.nonzeros);

  // A configuration key is checked by a parse of its own, which leaves nothing behind either.
  REQUIRE(apps::option_arguments("train", "lambda", toml::value(0.75), "key"));
  parser.parse({"train"});
  CHECK(parser.values().train.lambda == defaults.lambda);
}

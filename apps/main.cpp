// shardopt: the command-line entry point. The options are defined once (apps/options/cli.cpp) for the
// command line and configuration files alike; this file only dispatches, and is the one place where
// the process ends: every command returns its exit code here.

#include "apps/options/cli.hpp"
#include "apps/experiments/experiments.hpp"
#include "apps/experiments/report.hpp"
#include "apps/run/huge_pages.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

#include <sys/resource.h>

namespace {

/// A driver holds a connection to every node, a node one to each driver and tree child: the soft
/// limit on open files (often 1,024, too few for a driver of 1,000 nodes) is raised to the hard
/// limit, at most 65,536 (CAF's epoll multiplexer has no lower bound of its own).
void raise_open_files_limit() {
  constexpr rlim_t most = 65536;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= std::min(limit.rlim_max, most))
    return;
  limit.rlim_cur = std::min(limit.rlim_max, most);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

int dispatch(int argc, char** argv) {
  using namespace shardopt::apps;
  raise_open_files_limit();
  CLI::App app{"shardopt: distributed optimization over sharded data on the actor model"};
  app.require_subcommand(1);
  command_line options;
  define_commands(app, options);
  CLI11_PARSE(app, argc, argv);
  if (app.got_subcommand("run")) {
    auto args = run_arguments(options.run_file, app.get_subcommand("run")->remaining());
    if (!args) {
      std::fprintf(stderr, "shardopt: error: %s\n", args.error().message().c_str());
      return 2;
    }
    CLI::App resolved{"shardopt run"};
    command_line from_file;
    define_commands(resolved, from_file);
    std::vector<std::string> reversed(args->rbegin(), args->rend());
    try {
      resolved.parse(reversed);
    } catch (const CLI::ParseError& e) {
      return resolved.exit(e);
    }
    if (resolved.got_subcommand("ps-task"))
      return run_ps_task(from_file.task);
    return run_train(from_file.train);
  }
  if (app.got_subcommand("train"))
    return run_train(options.train);
  if (app.got_subcommand("ps-task"))
    return run_ps_task(options.task);
  if (app.got_subcommand("node"))
    return run_node(options.node);
  if (app.got_subcommand("status"))
    return run_status(options.status);
  if (app.got_subcommand("sweep"))
    return run_sweep(options.sweep);
  if (app.got_subcommand("report"))
    return run_report(options.report);
  if (app.got_subcommand("generate"))
    return run_generate(options.generate);
  if (app.got_subcommand("convert"))
    return run_convert(options.convert);
  return run_eval(options.eval);
}

} // namespace

int main(int argc, char** argv) {
  shardopt::apps::restart_on_huge_pages(argv);  // once, before anything is allocated or opened
  int code = 1;
  // Whatever a dependency throws ends the command with one line and exit code 1, never a signal.
  try {
    code = dispatch(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "shardopt: error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardopt: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "shardopt: error: unknown exception\n");
  }
  // Network commands leave their actor system running (runtime_options::abandon_at_exit): end the
  // process without running destructors of objects other threads may still use.
  std::fflush(nullptr);
  std::quick_exit(code);
}

#include "apps/commands/generate.hpp"

#include "apps/run/output_paths.hpp"
#include "apps/run/summary.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace shardopt::apps {

int run_generate(const generate_options& options) {
  auto spec = options.spec;
  const auto kind = model::parse_model_kind(options.model);
  if (!kind)
    return exit_with_error("--model " + options.model + ": generate writes linear, logistic or softmax data");
  spec.kind = *kind;
  if (!options.nonzeros_given)
    spec.nonzeros = std::min(spec.nonzeros, spec.features);  // the default, for a few features
  // The arguments first (no work), then where the file goes, then the writing.
  if (const auto problem = io::check_synthetic(spec); !problem.empty())
    return exit_with_error(problem);
  if (auto ok = check_output_file("-o", options.output); !ok)
    return exit_with_error(ok.error().message());
  const auto started = std::chrono::steady_clock::now();
  if (auto ok = io::write_synthetic(spec, options.output); !ok)
    return exit_with_error(ok.error().message());
  if (!options.quiet)
    std::fprintf(stderr, "wrote %s: %lld rows x %lld features, %lld non-zeros a row, %s labels, seed %llu (%.1fs)\n",
                 options.output.c_str(), static_cast<long long>(spec.rows),
                 static_cast<long long>(spec.features), static_cast<long long>(spec.nonzeros),
                 options.model.c_str(), static_cast<unsigned long long>(spec.seed),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return 0;
}

} // namespace shardopt::apps

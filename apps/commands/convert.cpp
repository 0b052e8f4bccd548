#include "apps/commands/convert.hpp"

#include "apps/run/output_paths.hpp"
#include "apps/run/summary.hpp"
#include "io/binary_cache.hpp"

#include <chrono>
#include <cstdio>

namespace shardopt::apps {

int run_convert(const convert_options& options) {
  const auto started = std::chrono::steady_clock::now();
  auto read = read_options_of(options.data);
  if (!read)
    return exit_with_error(read.error().message());
  if (auto ok = check_output_file("-o", options.output); !ok)
    return exit_with_error(ok.error().message());
  auto origin = io::origin_of(options.data.data, *read);
  if (!origin && options.data.data != "fashion-mnist")
    return exit_with_error(origin.error().message());
  auto data = io::read_dataset(options.data.data, io::split::train, *read);
  if (!data)
    return exit_with_error(data.error().message());
  const auto recorded = origin ? *origin : io::cache_origin{options.data.data, 0, 0, *read};
  if (auto ok = io::write_binary_dataset(options.output, *data, recorded); !ok)
    return exit_with_error(ok.error().message());
  if (!options.quiet)
    std::fprintf(stderr, "wrote %s: %lld rows x %lld features, %lld %s values, from %s (%.1fs)\n",
                 options.output.c_str(), static_cast<long long>(data->data.rows()),
                 static_cast<long long>(data->data.cols()), static_cast<long long>(data->data.nonzeros()),
                 data->data.is_sparse() ? "non-zero" : "dense", options.data.data.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return 0;
}

} // namespace shardopt::apps

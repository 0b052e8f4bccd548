#include "apps/convert.hpp"

#include "apps/summary.hpp"
#include "io/binary_cache.hpp"

#include <chrono>
#include <cstdio>

namespace shardopt::apps {

int run_convert(const convert_options& options) {
  const auto started = std::chrono::steady_clock::now();
  auto read = read_options_of(options.data);
  if (!read)
    return report_error(read.error().message());
  auto data = io::read_dataset(options.data.data, io::split::train, *read);
  if (!data)
    return report_error(data.error().message());
  if (auto ok = io::write_binary_dataset(options.output, *data, options.data.data, *read); !ok)
    return report_error(ok.error().message());
  if (!options.quiet)
    std::fprintf(stderr, "wrote %s: %lld rows x %lld features, %lld %s values, from %s (%.1fs)\n",
                 options.output.c_str(), static_cast<long long>(data->data.rows()),
                 static_cast<long long>(data->data.cols()), static_cast<long long>(data->data.nonzeros()),
                 data->data.is_sparse() ? "non-zero" : "dense", options.data.data.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return 0;
}

} // namespace shardopt::apps

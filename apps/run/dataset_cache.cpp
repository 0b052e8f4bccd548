#include "apps/run/dataset_cache.hpp"

#include "io/binary_cache.hpp"

#include <cstdio>
#include <filesystem>
#include <system_error>

namespace shardopt::apps {

result<io::raw_dataset> read_with_cache(const std::string& spec, io::split which,
                                        const io::read_options& options, const cache_settings& cache) {
  std::error_code ec;
  const bool text_file = std::filesystem::is_regular_file(spec, ec) && !io::is_binary_dataset(spec);
  if (!cache.enabled || !text_file)
    return io::read_dataset(spec, which, options);
  const auto path = io::cache_path(spec, options, cache.directory);
  auto now = io::origin_of(spec, options);
  if (!now)
    return now.error();
  if (auto recorded = io::recorded_origin(path); recorded && io::same_origin(*recorded, *now)) {
    auto cached = io::read_binary_dataset(path, options);
    if (cached)
      return cached;
    std::fprintf(stderr, "shardopt: cache %s is unusable (%s); reading %s again\n", path.c_str(),
                 cached.error().message().c_str(), spec.c_str());
  }
  auto parsed = io::read_dataset(spec, which, options);
  if (!parsed)
    return parsed;
  // A source that changed while it was read has no cache: the next run reads it again.
  if (auto after = io::origin_of(spec, options); !after || !io::same_origin(*after, *now)) {
    std::fprintf(stderr, "shardopt: %s changed while it was read; no cache written\n", spec.c_str());
    return parsed;
  }
  if (!cache.directory.empty())
    std::filesystem::create_directories(cache.directory, ec);
  if (auto written = io::write_binary_dataset(path, *parsed, *now); !written)
    std::fprintf(stderr, "shardopt: could not write the cache of %s: %s\n", spec.c_str(),
                 written.error().message().c_str());
  return parsed;
}

} // namespace shardopt::apps

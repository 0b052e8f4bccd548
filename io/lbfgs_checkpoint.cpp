#include "io/lbfgs_checkpoint.hpp"
#include "io/atomic_file.hpp"
#include "io/model_archive.hpp"

#include <boost/serialization/string.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace shardopt::io {

namespace {

// File layout, in a Boost text archive (finite doubles round-trip exactly): magic, format version,
// the settings (count, then key and value strings), the counts, f, theta, grad, the correction
// pairs (count, then s and y of each, oldest first), the `past` ring as IEEE bit patterns (it holds
// NaN for slots not yet filled, which text archives cannot carry), and an end marker.
const std::string magic = "shardopt-lbfgs-checkpoint";
const std::string end_marker = "end";
constexpr int format_version = 1;
const std::string prefix = "lbfgs-";
constexpr std::int64_t max_settings = 1024;
constexpr std::int64_t max_pairs = 100000;
constexpr std::int64_t max_dimension = std::int64_t{1} << 40;

std::uint64_t bits_of(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

double from_bits(std::uint64_t bits) {
  double value = 0;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

} // namespace

std::string lbfgs_checkpoint_name(int iteration) {
  return detail::checkpoint_file_name(prefix, iteration);
}

result<std::string> save_lbfgs_checkpoint(const std::string& directory, const lbfgs_checkpoint& saved, int keep) {
  const auto& state = saved.state;
  const auto path = (std::filesystem::path{directory} / lbfgs_checkpoint_name(state.iterations)).string();
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return fail_runtime(directory + ": cannot create the checkpoint directory: " + ec.message());
  auto written = stream_file_atomically(path, [&](std::ostream& stream) {
    boost::archive::text_oarchive archive{stream};
    archive << magic << format_version << static_cast<std::int64_t>(saved.settings.size());
    for (const auto& [key, value] : saved.settings)
      archive << key << value;
    archive << state.iterations << state.evaluations << state.seconds << state.f;
    detail::save_vector(archive, state.theta.data(), state.theta.size());
    detail::save_vector(archive, state.grad.data(), state.grad.size());
    archive << static_cast<std::int64_t>(state.s.size());
    for (std::size_t i = 0; i < state.s.size(); ++i) {
      detail::save_vector(archive, state.s[i].data(), state.s[i].size());
      detail::save_vector(archive, state.y[i].data(), state.y[i].size());
    }
    archive << static_cast<std::int64_t>(state.f_history.size());
    for (const double f : state.f_history)
      archive << bits_of(f);
    archive << end_marker;
  });
  if (!written)
    return written.error();
  detail::prune_checkpoint_files(directory, prefix, keep, state.iterations);
  return path;
}

result<lbfgs_checkpoint> load_lbfgs_checkpoint(const std::string& path) {
  return detail::read_archive_file<lbfgs_checkpoint>(
    path, magic, format_version, "L-BFGS checkpoint",
    [&](detail::archive_reader& archive) -> result<lbfgs_checkpoint> {
      const auto corrupt = [&](const std::string& what) { return fail_invalid(path + ": corrupt L-BFGS checkpoint: " + what); };
      lbfgs_checkpoint saved;
      auto& state = saved.state;
      std::int64_t count = 0;
      archive >> count;
      if (count < 0 || count > max_settings)
        return corrupt("a count of " + std::to_string(count) + " settings");
      saved.settings.resize(static_cast<std::size_t>(count));
      for (auto& [key, value] : saved.settings)
        for (auto* text : {&key, &value})
          if (auto ok = archive.load_string(*text); !ok)
            return ok.error().with_context(path + ": truncated or corrupt L-BFGS checkpoint: settings");
      archive >> state.iterations >> state.evaluations >> state.seconds >> state.f;
      for (auto* vector : {&state.theta, &state.grad})
        if (auto ok = archive.load_vector(*vector, max_dimension); !ok)
          return ok.error().with_context(path + ": truncated or corrupt L-BFGS checkpoint: theta");
      archive >> count;
      if (count < 0 || count > max_pairs)
        return corrupt("a count of " + std::to_string(count) + " correction pairs");
      state.s.resize(static_cast<std::size_t>(count));
      state.y.resize(static_cast<std::size_t>(count));
      for (std::size_t i = 0; i < state.s.size(); ++i)
        for (auto* vector : {&state.s[i], &state.y[i]})
          if (auto ok = archive.load_vector(*vector, state.theta.size()); !ok)
            return ok.error().with_context(path + ": truncated or corrupt L-BFGS checkpoint: correction pair");
      archive >> count;
      if (count < 0 || count > optimizer::max_past)
        return corrupt("an objective history of " + std::to_string(count) + " entries");
      state.f_history.resize(static_cast<std::size_t>(count));
      for (double& f : state.f_history) {
        std::uint64_t bits = 0;
        archive >> bits;
        f = from_bits(bits);
      }
      std::string end;
      if (auto ok = archive.load_string(end); !ok || end != end_marker)
        return corrupt("no end marker (truncated?)");
      for (std::size_t i = 0; i < state.s.size(); ++i)
        if (state.s[i].size() != state.theta.size() || state.y[i].size() != state.theta.size())
          return corrupt("a correction pair does not have the dimension of theta");
      if (state.grad.size() != state.theta.size() || state.iterations < 0 || state.evaluations < state.iterations)
        return corrupt("inconsistent sizes or counts");
      return saved;
    });
}

result<readable<lbfgs_checkpoint>> newest_readable_lbfgs_checkpoint(const std::string& directory) {
  return detail::newest_readable<lbfgs_checkpoint>(directory, prefix, load_lbfgs_checkpoint);
}

result<void> check_same_run(const lbfgs_checkpoint& saved,
                            const std::vector<std::pair<std::string, std::string>>& settings,
                            const std::string& path) {
  for (const auto& [key, value] : settings) {
    const auto recorded = std::find_if(saved.settings.begin(), saved.settings.end(),
                                       [&key = key](const auto& entry) { return entry.first == key; });
    if (recorded == saved.settings.end())
      return fail_invalid(path + ": saved by another run: it does not record " + key);
    if (recorded->second != value)
      return fail_invalid(path + ": saved by another run: " + key + " was " + recorded->second + " there, is " +
                  value + " here");
  }
  return {};
}

} // namespace shardopt::io

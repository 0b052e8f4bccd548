#include "io/checkpoint.hpp"
#include "io/atomic_file.hpp"
#include "io/model_archive.hpp"

#include <boost/archive/archive_exception.hpp>
#include <boost/serialization/string.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <locale>
#include <system_error>

namespace shardopt::io {

namespace {

// File layout, in a Boost text archive (doubles round-trip exactly): magic, format version, step,
// rule name, updates, slot count and slots, then the model fields exactly as in a model file
// (ending with its end marker).
const std::string magic = "shardopt-checkpoint";
constexpr int format_version = 1;
constexpr std::size_t max_slots = 8;
const std::string prefix = "ckpt-";
const std::string suffix = ".txt";

/// The step encoded in a checkpoint file name, or -1.
std::int64_t step_of(const std::string& name) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0
      || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const auto digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stoll(digits);
}

/// (step, path) of every checkpoint in `directory`, oldest first.
std::vector<std::pair<std::int64_t, std::string>> list_checkpoints(const std::string& directory) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it{directory, ec}, end; !ec && it != end; it.increment(ec)) {
    const auto step = step_of(it->path().filename().string());
    if (step >= 0)
      found.emplace_back(step, it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace

std::string checkpoint_name(std::int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%012lld", static_cast<long long>(step));
  return prefix + digits + suffix;
}

result<std::string> save_checkpoint(const std::string& directory, const checkpoint& state, int keep) {
  const auto path = (std::filesystem::path{directory} / checkpoint_name(state.step)).string();
  for (const auto& slot : state.slots)
    if (slot.size() != state.model.theta.size())
      return fail(path + ": cannot save the checkpoint: an optimizer slot has " +
                  std::to_string(slot.size()) + " entries, theta " +
                  std::to_string(state.model.theta.size()));
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return fail(directory + ": cannot create the checkpoint directory: " + ec.message());
  auto written = stream_file_atomically(path, [&](std::ostream& stream) {
    boost::archive::text_oarchive archive{stream};
    const auto slot_count = static_cast<std::int64_t>(state.slots.size());
    archive << magic << format_version << state.step << state.rule << state.updates << slot_count;
    for (const auto& slot : state.slots)
      detail::save_vector(archive, slot.data(), slot.size());
    detail::write_model_fields(archive, state.model);
  });
  if (!written)
    return written.error();
  if (keep > 0) {
    auto all = list_checkpoints(directory);
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < all.size(); ++i)
      std::filesystem::remove(all[i].second, ec);
  }
  return path;
}

result<checkpoint> load_checkpoint(const std::string& path) {
  return detail::read_archive_file<checkpoint>(
    path, magic, format_version, "checkpoint", [&](boost::archive::text_iarchive& archive) -> result<checkpoint> {
      checkpoint state;
      std::int64_t slot_count = 0;
      archive >> state.step >> state.rule >> state.updates >> slot_count;
      if (state.step < 0 || state.updates < 0 || slot_count < 0 ||
          slot_count > static_cast<std::int64_t>(max_slots))
        return fail(path + ": corrupt checkpoint: invalid step or optimizer state");
      state.slots.resize(static_cast<std::size_t>(slot_count));
      for (auto& slot : state.slots)
        if (!detail::load_vector(archive, slot, std::int64_t{1} << 40))
          return fail(path + ": corrupt checkpoint: invalid optimizer slot");
      auto model = detail::read_model_fields(archive, path);
      if (!model)
        return model.error().with_context(path + ": corrupt checkpoint");
      state.model = std::move(*model);
      for (const auto& slot : state.slots)
        if (slot.size() != state.model.theta.size())
          return fail(path + ": corrupt checkpoint: an optimizer slot does not match theta");
      return state;
    });
}

std::optional<std::string> latest_checkpoint(const std::string& directory) {
  auto all = list_checkpoints(directory);
  if (all.empty())
    return std::nullopt;
  return all.back().second;
}

} // namespace shardopt::io

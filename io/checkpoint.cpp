#include "io/checkpoint.hpp"
#include "io/atomic_file.hpp"
#include "io/model_archive.hpp"

#include <boost/archive/archive_exception.hpp>
#include <boost/serialization/string.hpp>

#include <algorithm>
#include <charconv>
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

/// What a directory entry's name says: not a checkpoint, a checkpoint at a step, or a checkpoint
/// name whose step does not fit in 64 bits (a foreign or hostile file; never one of ours).
struct parsed_name {
  enum { other, checkpoint, out_of_range } kind = other;
  std::int64_t step = -1;
};

parsed_name parse_name(const std::string& name) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) != 0
      || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return {};
  const char* first = name.data() + prefix.size();
  const char* last = name.data() + name.size() - suffix.size();
  if (!std::all_of(first, last, [](char c) { return c >= '0' && c <= '9'; }))
    return {};
  parsed_name parsed;
  const auto [end, ec] = std::from_chars(first, last, parsed.step);
  parsed.kind = ec == std::errc{} && end == last ? parsed_name::checkpoint : parsed_name::out_of_range;
  return parsed;
}

/// The checkpoints in a directory, oldest first, and the checkpoint-like names that were ignored.
struct listing {
  std::vector<std::pair<std::int64_t, std::string>> found;  ///< (step, path)
  std::vector<std::string> ignored;                         ///< "<path>: ignored: <why>"
};

/// Lists `directory`; a missing directory is an empty listing, one that cannot be read a failure.
result<listing> list_checkpoints(const std::string& directory) {
  listing out;
  std::error_code ec;
  if (!std::filesystem::exists(directory, ec) && !ec)
    return out;
  std::filesystem::directory_iterator it{directory, ec};
  for (std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
    const auto parsed = parse_name(it->path().filename().string());
    if (parsed.kind == parsed_name::checkpoint)
      out.found.emplace_back(parsed.step, it->path().string());
    else if (parsed.kind == parsed_name::out_of_range)
      out.ignored.push_back(it->path().string() + ": ignored: the step in its name does not fit in 64 bits");
  }
  if (ec)
    return fail(directory + ": cannot list the checkpoint directory: " + ec.message());
  std::sort(out.found.begin(), out.found.end());
  return out;
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
  if (auto all = list_checkpoints(directory); all && keep > 0) {
    const auto& found = all->found;
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < found.size(); ++i)
      std::filesystem::remove(found[i].second, ec);
  }
  return path;
}

result<checkpoint> load_checkpoint(const std::string& path) {
  return detail::read_archive_file<checkpoint>(
    path, magic, format_version, "checkpoint", [&](detail::archive_reader& archive) -> result<checkpoint> {
      checkpoint state;
      std::int64_t slot_count = 0;
      archive >> state.step;
      if (auto rule = archive.load_string(state.rule); !rule)
        return rule.error().with_context(path + ": truncated or corrupt checkpoint: rule name");
      archive >> state.updates >> slot_count;
      if (state.step < 0 || state.updates < 0 || slot_count < 0 ||
          slot_count > static_cast<std::int64_t>(max_slots))
        return fail(path + ": corrupt checkpoint: invalid step or optimizer state");
      state.slots.resize(static_cast<std::size_t>(slot_count));
      for (auto& slot : state.slots)
        if (auto loaded = archive.load_vector(slot, std::int64_t{1} << 40); !loaded)
          return loaded.error().with_context(path + ": truncated or corrupt checkpoint: optimizer slot");
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
  if (!all || all->found.empty())
    return std::nullopt;
  return all->found.back().second;
}

result<readable_checkpoint> newest_readable_checkpoint(const std::string& directory) {
  auto all = list_checkpoints(directory);
  if (!all)
    return all.error();
  readable_checkpoint out;
  out.warnings = std::move(all->ignored);
  for (auto it = all->found.rbegin(); it != all->found.rend(); ++it) {
    auto loaded = load_checkpoint(it->second);
    if (!loaded) {
      out.warnings.push_back("skipped: " + loaded.error().message());
      continue;
    }
    out.state = std::move(*loaded);
    out.path = it->second;
    break;
  }
  return out;
}

} // namespace shardopt::io

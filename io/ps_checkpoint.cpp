#include "io/ps_checkpoint.hpp"
#include "io/atomic_file.hpp"
#include "io/checkpoint_files.hpp"
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
const std::string checkpoint_magic = "shardopt-checkpoint";
constexpr int checkpoint_format_version = 4;  // 4: the model's feature hashing; 3: theta sparse when mostly 0; 2: the network architecture
constexpr int checkpoint_oldest_version = 1;
constexpr std::size_t max_slots = 8;
const std::string prefix = "ckpt-";

} // namespace

std::string ps_checkpoint_name(std::int64_t step) {
  return detail::checkpoint_file_name(prefix, step);
}

result<std::string> save_ps_checkpoint(const std::string& directory, const ps_checkpoint& state, int keep) {
  const auto path = (std::filesystem::path{directory} / ps_checkpoint_name(state.step)).string();
  for (const auto& slot : state.slots)
    if (slot.size() != state.model.theta.size())
      return fail_invalid(path + ": cannot save the checkpoint: an optimizer slot has " +
                  std::to_string(slot.size()) + " entries, theta " +
                  std::to_string(state.model.theta.size()));
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return fail_runtime(directory + ": cannot create the checkpoint directory: " + ec.message());
  auto written = stream_file_atomically(path, [&](std::ostream& stream) {
    boost::archive::text_oarchive archive{stream};
    const auto slot_count = static_cast<std::int64_t>(state.slots.size());
    archive << checkpoint_magic << checkpoint_format_version << state.step << state.rule << state.updates << slot_count;
    for (const auto& slot : state.slots)
      detail::save_vector(archive, slot.data(), slot.size());
    detail::write_model_fields(archive, state.model);
  });
  if (!written)
    return written.error();
  detail::prune_checkpoint_files(directory, prefix, keep, state.step);
  return path;
}

result<ps_checkpoint> load_ps_checkpoint(const std::string& path) {
  return detail::read_archive_file<ps_checkpoint>(
    path, checkpoint_magic, checkpoint_format_version, "checkpoint", [&](detail::archive_reader& archive) -> result<ps_checkpoint> {
      ps_checkpoint state;
      std::int64_t slot_count = 0;
      archive >> state.step;
      if (auto rule = archive.load_string(state.rule); !rule)
        return rule.error().with_context(path + ": truncated or corrupt checkpoint: rule name");
      archive >> state.updates >> slot_count;
      if (state.step < 0 || state.updates < 0 || slot_count < 0 ||
          slot_count > static_cast<std::int64_t>(max_slots))
        return fail_invalid(path + ": corrupt checkpoint: invalid step or optimizer state");
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
          return fail_invalid(path + ": corrupt checkpoint: an optimizer slot does not match theta");
      return state;
    },
    checkpoint_oldest_version);
}

result<readable_ps_checkpoint> newest_readable_ps_checkpoint(const std::string& directory) {
  return detail::newest_readable<ps_checkpoint>(directory, prefix, load_ps_checkpoint);
}

} // namespace shardopt::io

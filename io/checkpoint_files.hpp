#pragma once
// Checkpoint directories, whatever the checkpoint: file names "<prefix><step>.txt" with a 12-digit
// zero-padded step, listing, pruning to the newest K, and finding the newest one that reads back.
// Parameter-server checkpoints ("ckpt-") and L-BFGS checkpoints ("lbfgs-") share them.

#include "base/result.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shardopt::io {

/// What a search for the newest readable checkpoint found: the checkpoint to restart from, if any,
/// and what was skipped on the way, for the caller to print (io prints nothing).
template <class T>
struct readable {
  std::optional<T> state;             ///< the newest checkpoint that loads; nullopt if none does
  std::string path;                   ///< the file `state` was read from; empty without a state
  std::vector<std::string> warnings;  ///< one line per file skipped or ignored, naming the file
};

namespace detail {

/// "<prefix>000000001234.txt".
std::string checkpoint_file_name(const std::string& prefix, std::int64_t step);

/// The checkpoints in a directory, oldest first, and the checkpoint-like names that were ignored.
struct checkpoint_listing {
  std::vector<std::pair<std::int64_t, std::string>> found;  ///< (step, path)
  std::vector<std::string> ignored;                         ///< "<path>: ignored: <why>"
};

/// Lists the files named "<prefix><digits>.txt" in `directory`, ignoring temporary files of an
/// interrupted write; a name whose step does not fit in 64 bits is listed as ignored. A missing
/// directory is an empty listing; one that cannot be read a failure naming it.
result<checkpoint_listing> list_checkpoint_files(const std::string& directory, const std::string& prefix);

/// After a checkpoint at step `written` was saved: deletes all but the newest `keep` checkpoints
/// with `prefix` up to that step (keep <= 0: none; files numbered beyond it are not this run's, and
/// are neither counted nor deleted, so an unreadable higher-numbered file never pushes out the good
/// one just written), and the temporary files of checkpoint writes whose process is gone (a run
/// killed while writing). Best effort.
void prune_checkpoint_files(const std::string& directory, const std::string& prefix, int keep,
                            std::int64_t written);

/// Loads the checkpoints with `prefix` newest first and returns the first that reads back whole,
/// with a warning "skipped: <load error>" for each newer file and one for each ignored name.
template <class T>
result<readable<T>> newest_readable(const std::string& directory, const std::string& prefix,
                                    const std::function<result<T>(const std::string&)>& load) {
  auto all = list_checkpoint_files(directory, prefix);
  if (!all)
    return all.error();
  readable<T> out;
  out.warnings = std::move(all->ignored);
  for (auto it = all->found.rbegin(); it != all->found.rend(); ++it) {
    auto loaded = load(it->second);
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

} // namespace detail
} // namespace shardopt::io

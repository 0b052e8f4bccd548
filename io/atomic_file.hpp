#pragma once

#include "base/result.hpp"

#include <filesystem>
#include <functional>
#include <ostream>
#include <string_view>

namespace shardopt::io {

/// Replaces `path` with `bytes` so that every reader, and the disk after a crash or power cut, sees
/// either the old file or the whole new one, never a mix:
/// 1. creates a temporary file with a name no other writer uses (".<name>.tmp-<pid>-<random>") in
///    the directory of `path`, with the permissions a new file gets (0666 less the umask);
/// 2. writes all of `bytes`, retrying short writes and EINTR;
/// 3. flushes the file to the disk (fsync), closes it, renames it over `path`;
/// 4. flushes the directory, so that the rename itself survives a power cut.
/// On any failure the temporary file is removed, `path` is left as it was, and the failure reads
/// "<path>: cannot write: <step> <file>: <errno text>", e.g.
/// "out/status.json: cannot write: writing out/.status.json.tmp-41-9f3a: No space left on device".
/// Blocks for the writes and both flushes. Never throws.
result<void> write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

/// As `write_file_atomically`, with the contents written by `write` into a stream (numbers in the C
/// locale, whatever the global locale) instead of held in memory. The stream fails when a write
/// to the disk fails; the first error is the one reported. An exception thrown by `write` (e.g. a
/// Boost archive's) is caught and reported as the failure, after "<path>: cannot write: ".
result<void> stream_file_atomically(const std::filesystem::path& path,
                                    const std::function<void(std::ostream&)>& write);

} // namespace shardopt::io

#pragma once

// The files and folders a command will write, checked before it does any work: a run that trains
// for an hour, or a convert that parses a gigabyte, must not fail at the end for a typo in a path.

#include "base/result.hpp"

#include <string>

namespace shardopt::apps {

/// Where `path` (a file written by the command, given by `option`: "--save", "-o") would go is a
/// folder this process may write into, and `path` is not a folder; else the error, naming both.
result<void> check_output_file(const std::string& option, const std::string& path);

/// A folder the command makes if needed (--checkpoint-dir): it, or the nearest folder above it
/// that exists, may be written into.
result<void> check_output_folder(const std::string& option, const std::string& path);

} // namespace shardopt::apps

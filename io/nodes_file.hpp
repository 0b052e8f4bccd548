#pragma once

#include "base/result.hpp"

#include <string>

namespace shardopt::io {

/// The nodes a `--nodes-file` lists, as a `--nodes` list ("hostA:4242,hostB:4242"): one
/// "host:port" per line; blank lines and text after '#' are ignored. Errors name the file (and the
/// line: a line with spaces or commas inside is refused). The driver reads it at start and again
/// when it changes.
result<std::string> read_nodes_file(const std::string& path);

} // namespace shardopt::io

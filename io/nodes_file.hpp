#pragma once

// Lists of nodes from outside the command line: a file, or a DNS name with several addresses.

#include "base/result.hpp"

#include <string>

namespace shardopt::io {

/// The nodes a `--nodes-file` lists, as a `--nodes` list ("hostA:4242,hostB:4242"): one
/// "host:port" per line; blank lines and text after '#' are ignored. Errors name the file (and the
/// line: a line with spaces or commas inside is refused). The driver reads it at start and again
/// when it changes.
result<std::string> read_nodes_file(const std::string& path);

/// The nodes behind a DNS name, as a `--nodes` list: "NAME:PORT" becomes "a:PORT,b:PORT,..." for
/// every IPv4 address NAME resolves to (a Kubernetes headless service answers one per ready pod),
/// sorted and without repeats. Errors name NAME and say why it did not resolve.
result<std::string> resolve_nodes(const std::string& name_port);

} // namespace shardopt::io

#pragma once

#include "base/result.hpp"

#include <string>

namespace shardopt::io {

/// Checks TLS files before a process relies on them: a PEM certificate (chain), its private key
/// (which must match), and a PEM CA certificate. All three must be given, or none. Errors name the
/// file and what is wrong ("<file>: no such file", of kind not_found, or "<file>: not a usable PEM
/// certificate: ..."), so a node or driver refuses to start instead of failing at a handshake.
result<void> check_tls_files(const std::string& certificate, const std::string& key,
                             const std::string& ca);

} // namespace shardopt::io

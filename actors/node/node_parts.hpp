#pragma once

// Node-local data: what a node reads from its own disk for a driver. A part's summary, its exact
// feature moments, and a part made ready for a shard (features matched, labels encoded, scaled).
// Every request is checked against the node's limits and confined to its data root first, and
// every error is redacted (no file contents) before it goes back to the peer. node.cpp answers
// the protocol's scan, moments and spawnpart requests with these.

#include "actors/wire/messages.hpp"
#include "actors/node/node.hpp"
#include "actors/node/node_checks.hpp"

#include <memory>

namespace shardopt::actors {

/// The summary of the part `request` names (sizes, labels, per-feature bounds).
caf::expected<io::part_summary> scan_part(const io::part_request& request, const node_limits& limits);

/// The exact moments of the part `message.request` names, on `message.grid`.
caf::expected<io::feature_moments> part_moments(const moments_request& message, const node_limits& limits);

/// Checks a node-local shard request (the labels and scaling fit the model, the part is allowed)
/// and returns the part to read, its features set to the model's.
caf::expected<io::part_request> checked_part(const part_shard_spec& spec, const node_limits& limits);

/// Reads a part `checked_part` allowed and encodes and scales it as `spec` says.
caf::expected<std::shared_ptr<const model::dataset>> read_shard_part(const io::part_request& request,
                                                                     const part_shard_spec& spec);

} // namespace shardopt::actors

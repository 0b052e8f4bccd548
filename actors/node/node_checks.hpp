#pragma once

// What a node accepts from a peer before it does anything: the limits it enforces, and the checks
// of a request's model shape and node-local part (its path confined to the data root). Pure
// functions, no actors (node.cpp applies them).

#include "io/splits.hpp"
#include "model/linear_model.hpp"
#include "base/result.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace shardopt::actors {

/// What a node allows its drivers: shards and bytes of data (shipped or read) per driver and in
/// total, the largest model, and node-local data confined to `data_root`.
struct node_limits {
  std::int64_t shards_per_driver = 256;
  std::int64_t shards = 1024;
  std::int64_t bytes_per_driver = 0;     ///< 0: as `bytes`
  std::int64_t bytes = 0;                ///< 0: half of this machine's memory
  std::int64_t dimension = std::int64_t{1} << 27;  ///< parameters (features x outputs)
  std::int64_t parts = 65536;            ///< node-local: the largest part count
  std::string data_root;                 ///< node-local: canonical directory; empty: refused
  /// Data arriving in pieces that no piece has extended for this long is dropped before the next
  /// request that takes room (a driver that stalls mid-ship holds nothing for good).
  std::chrono::milliseconds staging_idle{std::chrono::seconds{60}};
};

/// Checks a shipped shard's data against its model: present, with the model's features, holding
/// `rows` (at least one), and only labels the model accepts. The error says which.
result<void> check_block(const model::model_shape& shape, const model::dataset* data,
                         model::row_range rows);

/// Half of this machine's memory: the default limit on the data a node holds.
std::int64_t half_of_memory();

/// Checks a model shape from a peer: kind, positive sizes, dimension within the limit, with no
/// product that can overflow.
result<void> check_shape(const model::model_shape& shape, const node_limits& limits);

/// Checks a restriction from a peer (the protocol's restrict request): a linear model of the
/// source's kind and outputs over `features`, which are increasing, each below the source's
/// features, and as many as the compact shape's. The error says which.
result<void> check_restriction(const model::model_shape& source, const model::model_shape& compact,
                               const std::vector<std::int64_t>& features, const node_limits& limits);

/// Checks a block layout from a peer: a first block and rows per block a dataset can have.
result<void> check_layout(std::int64_t first_block, std::int64_t block_rows);

/// Checks a moments grid from a peer: at most `limits.dimension` features, a finite factor, shifts
/// a double can take.
result<void> check_grid(const io::moment_grid& grid, const node_limits& limits);

/// Checks a node-local request from a peer and confines its path to the data root ("fashion-mnist"
/// or a path, relative paths relative to the root; symbolic links followed before the check, a
/// dataset directory's entries checked one by one).
result<io::part_request> check_part(io::part_request request, const node_limits& limits);

/// Removes file contents from a message before it goes to a peer: text a reader quoted from a
/// file ('...') is replaced by '...', and the message is cut to 300 characters.
std::string redact(const std::string& message);

} // namespace shardopt::actors

#pragma once

// What each driver holds on a node, and whether it may hold more: shards, groups, bytes (of data,
// of the buffers its shards and requests need), and the data of its next shard while it arrives in
// pieces. The node actor (node.cpp) asks
// `admit` before it takes anything, records what it took here, and ends what `release` hands back;
// this file keeps the counts and the limits, and nothing else (it spawns and ends no actor).

#include "actors/wire/messages.hpp"
#include "actors/node/node.hpp"
#include "actors/node/node_checks.hpp"
#include "io/assembly.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace shardopt::actors {

/// The shards, groups and bytes one driver holds on this node, and the data it is sending in pieces.
struct driver_share {
  std::vector<shard_actor> shards;
  std::vector<std::int64_t> shard_bytes;      ///< each shard's data and buffers, as `shards`
  std::vector<shard_actor> groups;
  std::vector<std::vector<shard_actor>> group_members;  ///< each group's shards, as `groups`
  std::vector<shard_actor> trees;              ///< its parts of reduction trees, newest last
  std::int64_t bytes = 0;                      ///< the shards' data and buffers, the staged data,
                                               ///< and request_bytes_of(dimension)
  std::int64_t dimension = 0;                  ///< the largest of its shards' models (0: none)
  std::optional<io::dataset_assembly> staged;  ///< a shard's data, arriving in pieces
  access_token staged_token;                   ///< the token its pieces and its shard carry
  std::int64_t staged_bytes = 0;               ///< of it, received so far (counted as held)
  std::chrono::steady_clock::time_point staged_at;  ///< when its last piece arrived

  bool empty() const { return shards.empty() && groups.empty() && trees.empty() && !staged; }
};

class node_holdings {
public:
  /// `limits` with its defaults filled in (bytes: half of this machine's memory; per driver: all).
  explicit node_holdings(node_limits limits);
  ~node_holdings();
  node_holdings(const node_holdings&) = delete;  // it may hold the process's kept buffers
  node_holdings& operator=(const node_holdings&) = delete;

  const node_limits& limits() const { return limits_; }

  /// Whether `driver` may hold `bytes` more and, unless `bytes_only`, one more shard. (Data
  /// arriving in pieces holds a shard's place from its first piece on.) A refusal names the
  /// bytes as `what`.
  result<void> admit(const caf::actor_addr& driver, std::int64_t bytes, bool bytes_only = false,
                     const std::string& what = "the data") const;

  /// What `driver` holds, or null.
  driver_share* find(const caf::actor_addr& driver);

  /// What `driver` holds, made empty if it held nothing; `added` says it was made.
  driver_share& share_of(const caf::actor_addr& driver, bool& added);

  /// Counts a shard `driver` now holds, with its data's and buffers' bytes, for a model of
  /// `dimension`: the share's dimension and request bytes rise to it (counted once a driver).
  void hold(driver_share& share, shard_actor shard, std::int64_t bytes, std::int64_t dimension);

  /// Starts the data of `share`'s next shard arriving in pieces (it holds a shard's place).
  void start_staging(driver_share& share, io::dataset_assembly assembly, const access_token& token);

  /// Counts `bytes` more of the data arriving for `share`.
  void add_staged(driver_share& share, std::int64_t bytes);

  /// Forgets the data `driver` was receiving in pieces, its bytes and its shard's place. True when
  /// the driver is then forgotten too (it holds nothing else here).
  bool drop_staged(const caf::actor_addr& driver);

  /// The drivers whose staged data no piece has extended for `limits().staging_idle`.
  std::vector<caf::actor_addr> idle_staging(std::chrono::steady_clock::time_point now) const;

  /// Forgets a shard that ended by itself (an exception in its pass), with its bytes; the driver
  /// too when it then holds nothing. Returns that driver when it was forgotten, else null. A shard
  /// no driver holds (one the node ended) changes nothing.
  caf::actor_addr forget_shard(const caf::actor_addr& shard);

  /// Forgets `driver` and hands back what it held (for the caller to end), if anything.
  std::optional<driver_share> release(const caf::actor_addr& driver);

  /// Whether `peers` are distinct shards of `share` (or, with `groups_too`, shards and groups) and a
  /// group more fits the limit of groups per driver; the error says what is wrong with `what`.
  result<void> check_members(const driver_share& share, const std::vector<shard_actor>& peers,
                             bool groups_too, const std::string& what) const;

  /// The most trees a driver keeps on a node: a driver builds a new tree after every loss and
  /// return, and the oldest beyond this many are ended (a run's trees hold no data).
  static constexpr std::size_t trees_per_driver = 4;

  /// Records a tree `share`'s driver now has here and hands back the ones to end (the oldest beyond
  /// trees_per_driver).
  std::vector<shard_actor> hold_tree(driver_share& share, shard_actor tree);

  /// Records a group `share`'s driver now has here, over `members` (its shards here).
  void hold_group(driver_share& share, shard_actor group, std::vector<shard_actor> members);

  /// Forgets `peer` (a shard or a group of `share`), the shards of a group with it and their
  /// bytes, and hands back what to end (the peer; a group ends its shards). Empty when `share`
  /// does not hold `peer` here.
  std::vector<shard_actor> release_peer(driver_share& share, const shard_actor& peer);

  /// Forgets every driver and hands back what they held.
  std::vector<driver_share> release_all();

  /// What the node holds now, in total.
  struct totals {
    std::int64_t drivers = 0;
    std::int64_t shards = 0;        ///< staged ones included
    std::int64_t bytes = 0;         ///< staged data included
    std::int64_t staged_bytes = 0;  ///< data still arriving in pieces
  };
  totals held() const;

private:
  /// Gives back the request bytes of a share that holds no shard any more.
  void settle(driver_share& share);

  /// Forgets `share`'s shard `i` and its bytes.
  void drop_shard(driver_share& share, std::size_t i);

  node_limits limits_;
  std::map<caf::actor_addr, driver_share> drivers_;
  std::int64_t shards_ = 0;  ///< shards held, staged ones included
  std::int64_t bytes_ = 0;
  bool holding_ = false;  ///< holds the process's kept buffers (while it has drivers)
  void hold_buffers();
  void let_go_buffers();
};

/// What one request to a driver's shards at `dimension` brings and answers with, beyond the
/// shards' own buffers: theta and a product's v (8 bytes an entry each), the grid with the
/// diagonal's (2) and a dense total's exact words (16). Saturates past 2^50 parameters.
inline std::int64_t request_bytes_of(std::int64_t dimension) {
  return 34 * std::min(dimension, std::int64_t{1} << 50);
}

/// A node's answer to a status request: `info`, its `limits`, and what `counters` say it holds and
/// served (count_held keeps the holdings there current).

node_status status_of(const node_limits& limits, const node_counters& counters, node_info info);

/// Sets the held-now counters to what `holdings` holds.
void count_held(const node_holdings& holdings, node_counters& counters);

} // namespace shardopt::actors

#include "actors/node/node_holdings.hpp"

#include "base/spare_words.hpp"

#include <algorithm>
#include <string>

namespace shardopt::actors {

node_holdings::node_holdings(node_limits limits) : limits_(std::move(limits)) {
  if (limits_.bytes <= 0)
    limits_.bytes = half_of_memory();
  if (limits_.bytes_per_driver <= 0)
    limits_.bytes_per_driver = limits_.bytes;
}

result<void> node_holdings::admit(const caf::actor_addr& driver, std::int64_t bytes, bool bytes_only,
                                  const std::string& what) const {
  const auto it = drivers_.find(driver);
  const std::int64_t mine =
    it == drivers_.end() ? 0 : static_cast<std::int64_t>(it->second.shards.size()) + (it->second.staged ? 1 : 0);
  const std::int64_t my_bytes = it == drivers_.end() ? 0 : it->second.bytes;
  if (!bytes_only && mine >= limits_.shards_per_driver)
    return fail_invalid("this node allows " + std::to_string(limits_.shards_per_driver) + " shards per driver");
  if (!bytes_only && shards_ >= limits_.shards)
    return fail_invalid("this node holds its limit of " + std::to_string(limits_.shards) + " shards");
  if (bytes > limits_.bytes_per_driver - my_bytes)
    return fail_invalid(what + " (" + std::to_string(bytes) + " bytes) would exceed this node's limit of "
                        + std::to_string(limits_.bytes_per_driver) + " bytes per driver ("
                        + std::to_string(my_bytes) + " held)");
  if (bytes > limits_.bytes - bytes_)
    return fail_invalid(what + " (" + std::to_string(bytes) + " bytes) would exceed this node's limit of "
                        + std::to_string(limits_.bytes) + " bytes in all (" + std::to_string(bytes_) + " held)");
  return {};
}

node_holdings::~node_holdings() {
  let_go_buffers();
}

// The answer buffers and received vectors are kept between passes while this node has drivers.
// The stores are the process's: keeping goes off, and what they keep is freed, once no node (or
// driver's run) in the process holds them, so that what finished runs drop later (replies still
// queued, requests in shards' mailboxes) is not kept for no one.
void node_holdings::hold_buffers() {
  if (holding_)
    return;
  shardopt::hold_spare_words();
  hold_received_vectors();
  holding_ = true;
}

void node_holdings::let_go_buffers() {
  if (!holding_)
    return;
  holding_ = false;
  shardopt::let_go_spare_words();
  let_go_received_vectors();
}

driver_share* node_holdings::find(const caf::actor_addr& driver) {
  const auto it = drivers_.find(driver);
  return it == drivers_.end() ? nullptr : &it->second;
}

driver_share& node_holdings::share_of(const caf::actor_addr& driver, bool& added) {
  auto [it, made] = drivers_.try_emplace(driver);
  added = made;
  if (made)
    hold_buffers();
  return it->second;
}

void node_holdings::hold(driver_share& share, shard_actor shard, std::int64_t bytes, std::int64_t dimension) {
  share.shards.push_back(std::move(shard));
  share.shard_bytes.push_back(bytes);
  const auto before = request_bytes_of(share.dimension);
  share.dimension = std::max(share.dimension, dimension);
  const auto raised = request_bytes_of(share.dimension) - before;
  share.bytes += bytes + raised;
  bytes_ += bytes + raised;
  ++shards_;
}

void node_holdings::start_staging(driver_share& share, io::dataset_assembly assembly, const access_token& token) {
  share.staged = std::move(assembly);
  share.staged_token = token;
  ++shards_;
}

void node_holdings::add_staged(driver_share& share, std::int64_t bytes) {
  share.staged_bytes += bytes;
  share.staged_at = std::chrono::steady_clock::now();
  share.bytes += bytes;
  bytes_ += bytes;
}

bool node_holdings::drop_staged(const caf::actor_addr& driver) {
  const auto it = drivers_.find(driver);
  if (it == drivers_.end())
    return false;
  auto& share = it->second;
  if (share.staged) {
    share.staged.reset();
    share.bytes -= share.staged_bytes;
    bytes_ -= share.staged_bytes;
    share.staged_bytes = 0;
    --shards_;
  }
  settle(share);
  if (!share.empty())
    return false;
  drivers_.erase(it);
  if (drivers_.empty())
    let_go_buffers();  // a driver that only staged data held them too
  return true;
}

std::vector<caf::actor_addr> node_holdings::idle_staging(std::chrono::steady_clock::time_point now) const {
  std::vector<caf::actor_addr> idle;
  for (const auto& [driver, share] : drivers_)
    if (share.staged && now - share.staged_at > limits_.staging_idle)
      idle.push_back(driver);
  return idle;
}

std::optional<driver_share> node_holdings::release(const caf::actor_addr& driver) {
  const auto it = drivers_.find(driver);
  if (it == drivers_.end())
    return std::nullopt;
  shards_ -= static_cast<std::int64_t>(it->second.shards.size()) + (it->second.staged ? 1 : 0);
  bytes_ -= it->second.bytes;
  auto share = std::move(it->second);
  drivers_.erase(it);
  if (drivers_.empty())
    let_go_buffers();
  return share;
}

std::vector<driver_share> node_holdings::release_all() {
  std::vector<driver_share> all;
  for (auto& [driver, share] : drivers_)
    all.push_back(std::move(share));
  drivers_.clear();
  shards_ = 0;
  bytes_ = 0;
  let_go_buffers();
  return all;
}

void node_holdings::hold_group(driver_share& share, shard_actor group,
                               std::vector<shard_actor> members) {
  share.groups.push_back(std::move(group));
  share.group_members.push_back(std::move(members));
}

std::vector<shard_actor> node_holdings::release_peer(driver_share& share, const shard_actor& peer) {
  auto index_in = [](const std::vector<shard_actor>& list, const shard_actor& x) {
    const auto addr = caf::actor_cast<caf::actor_addr>(x);
    return static_cast<std::size_t>(
      std::find_if(list.begin(), list.end(),
                   [&](const shard_actor& y) { return caf::actor_cast<caf::actor_addr>(y) == addr; })
      - list.begin());
  };
  std::vector<shard_actor> shards;
  const auto g = index_in(share.groups, peer);
  if (g < share.groups.size()) {
    shards = share.group_members[g];
    share.groups.erase(share.groups.begin() + static_cast<std::ptrdiff_t>(g));
    share.group_members.erase(share.group_members.begin() + static_cast<std::ptrdiff_t>(g));
  } else if (index_in(share.shards, peer) < share.shards.size()) {
    shards = {peer};
  } else {
    return {};
  }
  for (const auto& shard : shards) {
    const auto i = index_in(share.shards, shard);
    if (i < share.shards.size())
      drop_shard(share, i);
  }
  settle(share);
  return {peer};
}

void node_holdings::drop_shard(driver_share& share, std::size_t i) {
  share.bytes -= share.shard_bytes[i];
  bytes_ -= share.shard_bytes[i];
  --shards_;
  share.shards.erase(share.shards.begin() + static_cast<std::ptrdiff_t>(i));
  share.shard_bytes.erase(share.shard_bytes.begin() + static_cast<std::ptrdiff_t>(i));
}

caf::actor_addr node_holdings::forget_shard(const caf::actor_addr& shard) {
  for (auto it = drivers_.begin(); it != drivers_.end(); ++it) {
    auto& share = it->second;
    for (std::size_t i = 0; i < share.shards.size(); ++i) {
      if (caf::actor_cast<caf::actor_addr>(share.shards[i]) != shard)
        continue;
      drop_shard(share, i);
      settle(share);
      if (!share.empty())
        return {};
      const auto driver = it->first;
      drivers_.erase(it);
      if (drivers_.empty())
        let_go_buffers();
      return driver;
    }
  }
  return {};
}

void node_holdings::settle(driver_share& share) {
  if (!share.shards.empty())
    return;
  share.bytes -= request_bytes_of(share.dimension);
  bytes_ -= request_bytes_of(share.dimension);
  share.dimension = 0;
}

std::vector<shard_actor> node_holdings::hold_tree(driver_share& share, shard_actor tree) {
  share.trees.push_back(std::move(tree));
  std::vector<shard_actor> old;
  while (share.trees.size() > trees_per_driver) {
    old.push_back(std::move(share.trees.front()));
    share.trees.erase(share.trees.begin());
  }
  return old;
}

result<void> node_holdings::check_members(const driver_share& share,
                                          const std::vector<shard_actor>& peers, bool groups_too,
                                          const std::string& what) const {
  if (static_cast<std::int64_t>(share.groups.size()) >= limits_.shards_per_driver)
    return fail_invalid("this node allows " + std::to_string(limits_.shards_per_driver)
                        + " groups per driver");
  std::vector<caf::actor_addr> seen;
  for (const auto& peer : peers) {
    const auto addr = caf::actor_cast<caf::actor_addr>(peer);
    auto is = [&](const shard_actor& held) { return caf::actor_cast<caf::actor_addr>(held) == addr; };
    const bool owned = std::any_of(share.shards.begin(), share.shards.end(), is)
                       || (groups_too && std::any_of(share.groups.begin(), share.groups.end(), is));
    if (!owned || std::find(seen.begin(), seen.end(), addr) != seen.end())
      return fail_invalid("invalid " + what + " request: a member is not a distinct "
                          + (groups_too ? "shard or group" : "shard") + " of this driver here");
    seen.push_back(addr);
  }
  return {};
}

node_holdings::totals node_holdings::held() const {
  totals out{static_cast<std::int64_t>(drivers_.size()), shards_, bytes_, 0};
  for (const auto& [driver, share] : drivers_)
    out.staged_bytes += share.staged_bytes;
  return out;
}

node_status status_of(const node_limits& limits, const node_counters& counters, node_info info) {
  node_status out;
  out.info = std::move(info);
  out.drivers = counters.drivers.load(std::memory_order_relaxed);
  out.shards = counters.shards.load(std::memory_order_relaxed);
  out.bytes_held = counters.bytes_held.load(std::memory_order_relaxed);
  out.evaluations = counters.evaluations.load(std::memory_order_relaxed);
  out.restrictions = counters.restrictions.load(std::memory_order_relaxed);
  out.draining = counters.draining.load(std::memory_order_relaxed);
  out.node_local_data = !limits.data_root.empty();
  out.max_shards = limits.shards;
  out.max_shards_per_driver = limits.shards_per_driver;
  out.max_bytes = limits.bytes;
  out.max_bytes_per_driver = limits.bytes_per_driver;
  out.max_dimension = limits.dimension;
  return out;
}

void count_held(const node_holdings& holdings, node_counters& counters) {
  const auto held = holdings.held();
  counters.drivers.store(held.drivers, std::memory_order_relaxed);
  counters.shards.store(held.shards, std::memory_order_relaxed);
  counters.bytes_held.store(held.bytes, std::memory_order_relaxed);
  counters.staged_bytes.store(held.staged_bytes, std::memory_order_relaxed);
}

} // namespace shardopt::actors

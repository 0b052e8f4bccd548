#include "actors/node/node.hpp"

#include "actors/node/group.hpp"
#include "actors/wire/guard.hpp"
#include "actors/node/node_checks.hpp"
#include "actors/node/node_holdings.hpp"
#include "actors/node/node_parts.hpp"
#include "actors/node/node_tree.hpp"
#include "actors/wire/shard.hpp"
#include "io/assembly.hpp"
#include "model/restriction.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace shardopt::actors {

namespace {

/// "60 s", "0.25 s".
std::string seconds_text(std::chrono::milliseconds duration) {
  std::ostringstream text;
  text << static_cast<double>(duration.count()) / 1000 << " s";
  return text.str();
}

constexpr const char* draining_refusal = "this node is draining (shutting down): it takes no new drivers";
using part_reply = caf::result<std::uint64_t, shard_actor, std::int64_t, dense_vector, double, double>;

class node_impl : public guarded<node_actor::base> {
public:
  node_impl(caf::actor_config& config, runtime* rt, std::uint32_t threads, node_limits limits,
            std::shared_ptr<node_counters> counters)
    : guarded<node_actor::base>(config), threads_(threads), holdings_(std::move(limits)),
      links_(*rt), counters_(counters ? std::move(counters) : std::make_shared<node_counters>()) {
    count_held(holdings_, *counters_);
  }

  behavior_type make_behavior() override {
    guard_behavior(this);
    // Only actors of this process get past the guard with an exit message: the node service's
    // shutdown. Shards are not linked to the node (on_exit ends them).
    set_exit_handler([this](caf::exit_msg& msg) { quit(msg.reason); });
    // A driver that goes away takes what it held; a shard that ends by itself (an exception in
    // a pass) gives its bytes back (its driver sees it go down, as a lost peer).
    set_down_handler([this](caf::down_msg& down) {
      end_derived(down.source);
      if (holdings_.find(down.source))
        release(down.source);
      else if (auto driver = holdings_.forget_shard(down.source))
        demonitor(driver);
      count_held(holdings_, *counters_);
    });
    return {
      [this](hello_atom, std::uint64_t round, std::uint32_t version,
             const std::vector<char>& probe) -> caf::result<std::uint64_t, node_info> {
        if (auto ok = check_hello(version, probe, "the driver"); !ok)
          return counted(node_request::hello, refused(ok.error().message()));
        if (counters_->draining.load())
          return counted(node_request::hello, refused(draining_refusal));
        return {round, info()};
      },
      [this](status_atom, std::uint64_t round) -> caf::result<std::uint64_t, node_status> {
        return {round, status_of(limits(), *counters_, info())};
      },
      [this](append_atom, std::uint64_t round, const access_token& token, std::int64_t rows,
             std::int64_t nonzeros, std::int64_t first_row, const data_block& piece) {
        return serve<std::int64_t>(node_request::append, round, [&] {
          expire_staged();
          return stage(token, rows, nonzeros, first_row, piece);
        });
      },
      [this](spawn_atom, std::uint64_t round, const access_token& token, shard_spec& spec) {
        return serve<shard_actor>(node_request::spawn, round, [&] {
          expire_staged();
          return spawn_shipped(token, spec);
        });
      },
      [this](scan_atom, std::uint64_t round, const access_token&, part_message& message) {
        return serve<summary_message>(node_request::scan, round,
                                      [&] { return scan_part(message.request, limits()); });
      },
      [this](moments_atom, std::uint64_t round, const access_token&, moments_request& message) {
        return serve<moments_message>(node_request::moments, round,
                                      [&] { return part_moments(message, limits()); });
      },
      [this](spawnpart_atom, std::uint64_t round, const access_token& token,
             part_shard_spec& spec) -> part_reply {
        return serve_part(node_request::spawnpart, round, [&] { return spawn_part(token, spec); });
      },
      [this](restrict_atom, std::uint64_t round, const access_token& token,
             const shard_restriction& spec) -> part_reply {
        return serve_part(node_request::restrict, round, [&] { return restrict_shard(token, spec); });
      },
      [this](group_atom, std::uint64_t round, const access_token& token,
             const std::vector<shard_actor>& members) {
        return serve<shard_actor>(node_request::group, round,
                                  [&] { return spawn_group_of(token, members); });
      },
      [this](release_atom, std::uint64_t round, const access_token&,
             const shard_actor& peer) -> caf::result<std::uint64_t, std::int64_t> {
        const auto driver = caf::actor_cast<caf::actor_addr>(current_sender());
        auto* share = driver ? holdings_.find(driver) : nullptr;
        const auto ended = share ? holdings_.release_peer(*share, peer) : std::vector<shard_actor>{};
        if (ended.empty())
          return counted(node_request::release,
                         refused("invalid release request: not a shard or group of this driver here"));
        if (share->empty()) {  // nothing left here: the driver is forgotten, as when it goes away
          holdings_.release(driver);
          demonitor(driver);
        }
        caf::scoped_actor reaper{system()};  // unnameable: guarded shards and groups accept its exit
        for (const auto& old : ended)
          reaper->send_exit(old, caf::exit_reason::user_shutdown);
        count_held(holdings_, *counters_);
        return {round, static_cast<std::int64_t>(ended.size())};
      },
      [this](tree_atom, std::uint64_t round, const access_token& token,
             const std::vector<shard_actor>& own, const std::vector<std::string>& child_nodes,
             const std::vector<shard_actor>& child_trees) {
        return serve<shard_actor>(node_request::tree, round, [&] {
          return spawn_tree_of(token, own, child_nodes, child_trees);
        });
      },
    };
  }

  void on_exit() override {
    for (const auto& share : holdings_.release_all())
      end(share);
  }

private:
  const node_limits& limits() const { return holdings_.limits(); }

  node_info info() const {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    return node_info{protocol_version, threads_, host};
  }

  /// A request's answer, after counting it (a refusal, by reason) and what the node now holds.
  template <class Result>
  Result counted(node_request request, Result answer) {
    if constexpr (std::is_same_v<Result, caf::error>)
      counters_->refuse(request, reason_of(answer));
    else if (answer.flag == caf::rt_error)
      counters_->refuse(request, reason_of(answer.err));
    count_held(holdings_, *counters_);
    return answer;
  }

  /// Serves one request: `body` (shielded: an exception becomes an error reply) gives the answer,
  /// convertible to `T`, or an error; the reply echoes `round`. Counted.
  template <class T, class Body>
  caf::result<std::uint64_t, T> serve(node_request request, std::uint64_t round, Body body) {
    return counted(request, shielded([&]() -> caf::result<std::uint64_t, T> {
      auto answer = body();
      if (!answer)
        return std::move(answer.error());
      return {round, T{std::move(*answer)}};
    }));
  }

  /// Serves a request answered as a part's shard (spawnpart, restrict): `make` gives the shard.
  template <class Make>
  part_reply serve_part(node_request request, std::uint64_t round, Make make) {
    return counted(request, shielded([&]() -> part_reply {
      expire_staged();
      auto shard = make();
      if (!shard)
        return std::move(shard.error());
      return {round, std::move(shard->shard), shard->rows, dense_vector{shard->bounds.feature_max},
              shard->bounds.max_label, shard->bounds.max_row_norm};
    }));
  }

  /// The driver behind the current request, if it may hold `bytes` more data and, unless it asks
  /// for bytes only, one more shard (node_holdings::admit).
  result<caf::actor_addr> admit(std::int64_t bytes, bool bytes_only = false, const std::string& what = "the data") {
    const auto driver = caf::actor_cast<caf::actor_addr>(current_sender());
    if (!driver)
      return fail_invalid("an anonymous request cannot own shards");
    if (counters_->draining.load() && !holdings_.find(driver))
      return fail_invalid(draining_refusal);
    if (auto ok = holdings_.admit(driver, bytes, bytes_only, what); !ok)
      return ok.error();
    return driver;
  }

  /// What `driver` holds here; watched from the first thing it holds on.
  driver_share& share_of(const caf::actor_addr& driver) {
    bool added = false;
    auto& share = holdings_.share_of(driver, added);
    if (added)
      monitor(driver);
    return share;
  }

  /// What a shard here computes on, and the token it answers to: what a restriction of it needs;
  /// and the restrictions made of it, which end with it (a copy outlives no driver's shard).
  struct shard_source {
    model::model_shape shape;
    std::shared_ptr<const model::dataset> data;
    model::row_range rows;
    access_token token;
    std::vector<caf::actor_addr> derived;  // weak: an ended copy's memory goes with it
  };

  /// Forgets a shard that went down and ends the restrictions made of it.
  void end_derived(const caf::actor_addr& shard) {
    auto found = sources_.find(shard);
    if (found == sources_.end())
      return;
    auto derived = std::move(found->second.derived);
    sources_.erase(found);
    if (derived.empty())
      return;
    caf::scoped_actor reaper{system()};  // unnameable: guarded shards accept its exit
    for (const auto& copy : derived)
      if (auto alive = caf::actor_cast<caf::actor>(copy))
        reaper->send_exit(alive, caf::exit_reason::user_shutdown);
  }

  /// Spawns a shard for `driver`, ended when that driver goes away or the node ends. `source` is
  /// what it computes on, kept for restrictions while the shard lives.
  shard_actor host(const caf::actor_addr& driver, model::block_evaluator evaluator, std::int64_t bytes,
                   const block_layout& layout, const access_token& token, shard_source source) {
    const auto dimension = source.shape.dimension();
    auto shard = spawn_shard(system(), std::move(evaluator), layout, token, counters_);
    monitor(shard);  // its bytes go when it does, and its source
    sources_.emplace(caf::actor_cast<caf::actor_addr>(shard), std::move(source));
    holdings_.hold(share_of(driver), shard, bytes, dimension);
    return shard;
  }

  /// Forgets the data `driver` was receiving in pieces; unwatches the driver if that was all.
  void drop_staged(const caf::actor_addr& driver) {
    if (holdings_.drop_staged(driver))
      demonitor(driver);
  }

  /// Drops the data no piece has extended for the staging limit, whoever was sending it.
  void expire_staged() {
    for (const auto& driver : holdings_.idle_staging(std::chrono::steady_clock::now()))
      drop_staged(driver);
  }

  /// A piece of the data of the requesting driver's next shard (see the protocol): the rows
  /// received so far, or why the piece was refused (the data received so far is then dropped).
  /// The whole is allocated at the first piece (pages a piece has not written are not resident)
  /// but counted against the limits as it arrives, so announcing costs a peer the bytes it sends.
  caf::expected<std::int64_t> stage(const access_token& token, std::int64_t rows, std::int64_t nonzeros,
                                    std::int64_t first_row, const data_block& piece) {
    const auto asking = caf::actor_cast<caf::actor_addr>(current_sender());
    if (!piece.data || piece.rows.begin < 0 || piece.rows.end > piece.data->rows()
        || piece.rows.size() < 1)
      return make_error(errc::dimension_mismatch, "invalid data piece: no rows");
    if (first_row == 0) {
      drop_staged(asking);  // a new shard's data replaces what was left unfinished
      const io::data_extent whole{piece.data->is_sparse(), rows, piece.data->cols(), nonzeros};
      if (auto ok = io::check_extent(whole); !ok)
        return make_error(errc::dimension_mismatch, "invalid data piece: " + ok.error().message());
      if (whole.cols > limits().dimension)
        return refused("invalid data piece: " + std::to_string(whole.cols)
                      + " features, more than this node's limit of "
                      + std::to_string(limits().dimension) + " parameters");
      // The whole must fit, with what a request at its dimension brings (the shard's buffers are
      // known once it is laid out); it is counted as it comes.
      auto driver = admit(io::bytes_of(whole) + request_charge(whole.cols + 1), false,
                          "the data and what a request at its dimension brings");
      if (!driver)
        return refused(driver.error().message());
      auto assembly = io::dataset_assembly::start(whole);
      if (!assembly)
        return make_error(errc::dimension_mismatch, "invalid data piece: " + assembly.error().message());
      holdings_.start_staging(share_of(*driver), std::move(*assembly), token);
    }
    auto* staging = holdings_.find(asking);
    if (!staging || !staging->staged)
      return make_error(errc::dimension_mismatch,
                        "invalid data piece: it starts at row " + std::to_string(first_row)
                          + ", but no data is arriving (a first piece starts at row 0; data that "
                          + "gets no piece for " + seconds_text(limits().staging_idle) + " is dropped)");
    auto& share = *staging;
    if (token != share.staged_token)
      return refused("invalid data piece: the data arriving here belongs to another token");
    // CSR: the whole's one extra row start is counted with the first piece.
    const auto extent = io::extent_of(*piece.data, piece.rows);
    const auto bytes = io::bytes_of(extent) - (extent.sparse && first_row > 0 ? 4 : 0);
    if (auto ok = admit(bytes, true); !ok) {
      drop_staged(asking);
      return refused(ok.error().message());
    }
    if (auto ok = share.staged->append(first_row, *piece.data, piece.rows); !ok) {
      drop_staged(asking);
      return make_error(errc::dimension_mismatch, "invalid data piece: " + ok.error().message());
    }
    holdings_.add_staged(share, bytes);
    return share.staged->rows_received();
  }

  /// Ends what a driver held. The exits come from a scoped actor that no peer can name: a guarded
  /// shard accepts no exit from the node itself, whose id peers know (wire/guard.hpp).
  void end(const driver_share& share) {
    caf::scoped_actor reaper{system()};
    for (const auto* shards : {&share.trees, &share.groups, &share.shards})
      for (const auto& shard : *shards)
        reaper->send_exit(shard, caf::exit_reason::user_shutdown);
  }

  void release(const caf::actor_addr& driver) {
    if (auto share = holdings_.release(driver))
      end(*share);
  }

  /// A group over shards the requesting driver holds here (see the protocol).
  caf::expected<shard_actor> spawn_group_of(const access_token& token,
                                            const std::vector<shard_actor>& members) {
    const auto driver = caf::actor_cast<caf::actor_addr>(current_sender());
    auto* held = driver ? holdings_.find(driver) : nullptr;
    if (!held)
      return refused("invalid group request: this driver holds no shards here");
    auto& share = *held;
    if (members.empty() || members.size() > share.shards.size())
      return refused("invalid group request: " + std::to_string(members.size())
                    + " members for a driver holding " + std::to_string(share.shards.size())
                    + " shards here");
    if (auto ok = holdings_.check_members(share, members, false, "group"); !ok)
      return refused(ok.error().message());
    auto group = spawn_group(system(), members, threads_, token);
    holdings_.hold_group(share, group, members);
    return group;
  }

  /// This node's part of a reduction tree for the requesting driver (see the protocol).
  caf::expected<shard_actor> spawn_tree_of(const access_token& token,
                                           const std::vector<shard_actor>& own,
                                           const std::vector<std::string>& child_nodes,
                                           const std::vector<shard_actor>& child_trees) {
    const auto driver = caf::actor_cast<caf::actor_addr>(current_sender());
    auto* held = driver ? holdings_.find(driver) : nullptr;
    if (!held || held->shards.empty())  // a group whose shards were released holds none
      return refused("invalid tree request: this driver holds no shards here");
    auto& share = *held;
    if (own.empty() || child_nodes.size() != child_trees.size()
        || child_nodes.size() > max_tree_children)
      return refused("invalid tree request: " + std::to_string(own.size()) + " own peers, "
                     + std::to_string(child_nodes.size()) + " child nodes and "
                     + std::to_string(child_trees.size()) + " child trees (at most "
                     + std::to_string(max_tree_children) + " children)");
    if (auto ok = holdings_.check_members(share, own, true, "tree"); !ok)
      return refused(ok.error().message());
    auto members = links_.children(child_nodes, child_trees);
    if (!members)
      return std::move(members.error());
    std::vector<tree_actor> children;
    for (const auto& child : *members)
      children.push_back(caf::actor_cast<tree_actor>(child));
    auto tree = spawn_tree(system(), own, std::move(children), token, share.dimension);
    caf::scoped_actor reaper{system()};  // unnameable: a guarded tree accepts its exit
    for (const auto& old : holdings_.hold_tree(share, tree))
      reaper->send_exit(old, caf::exit_reason::user_shutdown);
    return tree;
  }

  caf::expected<shard_actor> spawn_shipped(const access_token& token, const shard_spec& spec) {
    const auto& shape = spec.shape;
    auto block = spec.block;
    std::int64_t staged = -1;  // the bytes of data that arrived in pieces, if it did
    if (block.data && block.rows.size() == 0) {  // the data that arrived in pieces
      const auto asking = caf::actor_cast<caf::actor_addr>(current_sender());
      auto* staging = holdings_.find(asking);
      if (!staging || !staging->staged)
        return make_error(errc::dimension_mismatch, "invalid shard request: no data (no rows, and "
                                                    "none arrived in pieces)");
      auto& share = *staging;
      if (token != share.staged_token)
        return refused("invalid shard request: the data that arrived belongs to another token");
      if (!share.staged->complete())
        return make_error(errc::dimension_mismatch,
                          "invalid shard request: its data is incomplete, "
                            + std::to_string(share.staged->rows_received()) + " of "
                            + std::to_string(share.staged->whole().rows) + " rows arrived");
      block.data = share.staged->finish();
      block.rows = {0, block.data->rows()};
      staged = share.staged_bytes;  // dropped below: counted again as the shard's
    }
    // Data that arrived in pieces is dropped whatever the answer: its place and bytes become the
    // shard's, or nothing.
    struct drop_arrived {
      node_impl* node;
      bool arrived;
      ~drop_arrived() {
        if (arrived)
          node->drop_staged(caf::actor_cast<caf::actor_addr>(node->current_sender()));
      }
    } dropped{this, staged >= 0};
    if (auto ok = check_shape(shape, limits()); !ok)
      return refused("invalid shard request: " + ok.error().message());
    if (auto ok = check_layout(spec.layout.first_block, spec.layout.block_rows); !ok)
      return refused("invalid shard request: " + ok.error().message());
    if (auto ok = check_block(shape, block.data.get(), block.rows); !ok)
      return make_error(errc::dimension_mismatch, ok.error().message());
    const auto arrived = std::max<std::int64_t>(staged, 0);  // counted already, with a shard's place
    if (auto driver = admit(io::bytes_of(*block.data) - arrived, staged >= 0); !driver)  // before the layout
      return refused(driver.error().message());
    model::block_evaluator evaluator{shape, block.data, block.rows, spec.layout.block_rows};
    const auto bytes = io::bytes_of(*block.data) + evaluator.working_bytes();
    auto driver = admit(bytes + request_charge(shape.dimension()) - arrived, staged >= 0, shard_needs);
    if (!driver)
      return refused(driver.error().message());
    dropped.arrived = false;
    drop_staged(*driver);
    return host(*driver, std::move(evaluator), bytes, spec.layout, token,
                shard_source{shape, block.data, block.rows, token, {}});
  }

  /// What the admission of a shard counts.
  static constexpr const char* shard_needs = "the shard's data and the buffers its passes and requests need";

  /// What a request at `dimension` would add to the current driver's count: the raise of its
  /// request bytes (node_holdings.hpp's `request_bytes_of`), counted once a driver.
  std::int64_t request_charge(std::int64_t dimension) {
    const auto* share = holdings_.find(caf::actor_cast<caf::actor_addr>(current_sender()));
    const auto held = share ? share->dimension : 0;
    return dimension > held ? request_bytes_of(dimension) - request_bytes_of(held) : 0;
  }

  /// A node-local shard, its rows and its data's bounds.
  struct part_shard {
    shard_actor shard;
    std::int64_t rows = 0;
    model::data_bounds bounds;
  };

  caf::expected<part_shard> spawn_part(const access_token& token, const part_shard_spec& spec) {
    const auto& shape = spec.shape;
    if (auto ok = check_shape(shape, limits()); !ok)
      return refused("invalid shard request: " + ok.error().message());
    if (auto ok = check_layout(spec.layout.first_block, spec.layout.block_rows); !ok)
      return refused("invalid shard request: " + ok.error().message());
    auto request = checked_part(spec, limits());
    if (!request)
      return std::move(request.error());
    if (auto driver = admit(0); !driver)  // refuse early, before reading anything
      return refused(driver.error().message());
    auto read = read_shard_part(*request, spec);
    if (!read)
      return std::move(read.error());
    auto data = std::move(*read);
    if (auto driver = admit(io::bytes_of(*data)); !driver)
      return refused(driver.error().message());
    const model::row_range rows{0, data->rows()};
    return host_part(token, shape, std::move(data), rows, spec.layout);
  }

  /// A shard for the current driver over rows `rows` of `data` (counted against its limits), with
  /// the rows it holds and its data's bounds.
  caf::expected<part_shard> host_part(const access_token& token, const model::model_shape& shape,
                                      std::shared_ptr<const model::dataset> data, model::row_range rows,
                                      const block_layout& layout) {
    const auto data_bytes = io::bytes_of(*data);
    model::block_evaluator evaluator{shape, data, rows, layout.block_rows};
    const auto bytes = data_bytes + evaluator.working_bytes();
    auto driver = admit(bytes + request_charge(shape.dimension()), false, shard_needs);
    if (!driver)
      return refused(driver.error().message());
    model::data_bounds bounds{{}, 0, layout.block_rows, 0};
    evaluator.add_bounds_to(bounds);  // found while the evaluator numbered the features
    return part_shard{host(*driver, std::move(evaluator), bytes, layout, token,
                           shard_source{shape, std::move(data), rows, token, {}}),
                      rows.size(), std::move(bounds)};
  }

  /// A shard over some columns of a shard's data here (see the protocol's restrict request).
  caf::expected<part_shard> restrict_shard(const access_token& token, const shard_restriction& spec) {
    const auto found = sources_.find(caf::actor_cast<caf::actor_addr>(spec.source));
    // A shard that is not here and a wrong token get one answer: a peer learns nothing of others'.
    if (!spec.source || found == sources_.end() || found->second.token != spec.source_token)
      return refused(std::string{"invalid restrict request: "} + not_a_source);
    const auto& source = found->second;
    if (auto ok = check_restriction(source.shape, spec.shape, spec.features, limits()); !ok)
      return refused("invalid restrict request: " + ok.error().message());
    if (auto ok = check_layout(spec.layout.first_block, spec.layout.block_rows); !ok)
      return refused("invalid restrict request: " + ok.error().message());
    // The copy's bytes are admitted before it is made (only the source's rows: a shard shipped
    // within this process shares its whole dataset).
    const io::data_extent extent{source.data->is_sparse(), source.rows.size(), spec.shape.features,
                                 model::restricted_nonzeros(*source.data, spec.features, source.rows, threads_)};
    if (auto driver = admit(io::bytes_of(extent)); !driver)
      return refused(driver.error().message());
    auto data = std::make_shared<const model::dataset>(
      model::restrict_columns(*source.data, spec.features, source.rows, threads_));
    auto made = host_part(token, spec.shape, data, {0, data->rows()}, spec.layout);
    if (made) {
      found->second.derived.push_back(caf::actor_cast<caf::actor_addr>(made->shard));  // ends with it
      counters_->restrictions.fetch_add(1, std::memory_order_relaxed);
    }
    return made;
  }

  std::uint32_t threads_;
  node_holdings holdings_;
  child_links links_;  // the nodes this one sends tree traffic to
  std::shared_ptr<node_counters> counters_;
  std::map<caf::actor_addr, shard_source> sources_;  // of the shards here, while they live
};

} // namespace

node_actor spawn_node(runtime& rt, std::uint32_t threads, node_limits limits,
                      std::shared_ptr<node_counters> counters) {
  // Detached: reading a node-local part is blocking file I/O, and connecting to a child node
  // blocks too; neither may hold a scheduler thread.
  return rt.system().spawn<node_impl, caf::detached>(&rt, threads, std::move(limits),
                                                     std::move(counters));
}

} // namespace shardopt::actors

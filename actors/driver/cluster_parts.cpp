#include "actors/driver/cluster_impl.hpp"

#include "io/splits.hpp"

namespace shardopt::actors {

namespace {

/// How a node-local objective makes each round's working-set objective, with no data on the
/// driver: through a sibling of the cluster, each node restricts the run's shard of a part it
/// holds (the protocol's restrict request); a part whose shard is not on the node that takes the
/// working set's (a node lost mid-round) is read there again first, by the sibling. A node that
/// fails to (draining, its limits, lost) has its parts read again on the other nodes, for the
/// same bits; when no node is left to take them, the restriction evaluates through the full
/// objective for that round (sharded_objective::restrict: the sums' last bits may differ). Either
/// is logged once while it lasts.
struct part_working_sets {
  std::shared_ptr<cluster::impl> state;
  std::shared_ptr<const held_parts> held;
  std::vector<std::vector<std::size_t>> peers;  // each peer's parts, as first placed
  std::vector<std::size_t> plan;
  std::function<part_shard_spec(std::size_t)> spec_of;
  std::vector<block_layout> layouts;
  std::vector<std::int64_t> blocks;
  std::vector<std::int64_t> rows;
  model::data_bounds empty_bounds;  // the run's block rows, blocks and bits; no rows added
  double lambda;
  std::chrono::milliseconds timeout;
  std::function<void(const std::string&)> log;
  std::shared_ptr<std::string> logged = std::make_shared<std::string>();  // what was logged last

  result<sharded_objective> operator()(model::model_shape compact, const std::vector<std::int64_t>& features,
                                       const sharded_objective::columns_fn&) const {
    const auto& c = *state;
    auto usable = c.alive;  // less the nodes that fail this round's set
    std::string why = "no node left";
    std::string moved;      // the nodes that failed, and why
    std::string failed_nodes;
    for (auto live = first_live(c); live < usable.size();) {
      auto now = placement_now(c, plan, peers, live);
      for (auto& node : now)
        if (!usable[node])
          node = live;
      auto failed = std::make_shared<std::size_t>(usable.size());
      auto made = make(compact, features, now, failed);
      if (made) {
        note(moved.empty() ? std::string{} : "moved from" + failed_nodes,
             "working set of " + std::to_string(compact.features) + " features: " + moved);
        return made;
      }
      why = made.error().message();
      if (*failed >= usable.size() || !usable[*failed])
        break;
      usable[*failed] = false;
      failed_nodes += " " + c.info[*failed].endpoint.text();
      moved += (moved.empty() ? "" : "; ") + ("node " + c.info[*failed].endpoint.text()
                                              + " could not take it, its parts read again on other nodes ("
                                              + why + ")");
      while (live < usable.size() && !usable[live])
        ++live;
    }
    note("full", "working set of " + std::to_string(compact.features)
                   + " features evaluated through the full objective (" + why + ")");
    return fail_runtime(why);
  }

  /// Logs `message` unless the last one logged was of the same `kind` (the nodes moved from, not
  /// their reasons' figures; "": nothing to say).
  void note(const std::string& kind, const std::string& message) const {
    if (log && !kind.empty() && kind != *logged)
      log(message);
    *logged = kind;
  }

  /// The working set's objective with its shards on `now`; `failed` gets the node of the last
  /// shard tried, the one that failed when it fails (a refusal, a lost node, a group not made).
  result<sharded_objective> make(const model::model_shape& compact, const std::vector<std::int64_t>& features,
                                 const std::vector<std::size_t>& now, std::shared_ptr<std::size_t> failed) const {
    auto bounds = std::make_shared<model::data_bounds>(empty_bounds);
    spawn_fn spawn = [held = held, parent = state->token, spec_of = spec_of, layouts = layouts,
                      rows = rows, bounds, compact, features, failed](cluster::impl& s, std::size_t node,
                                                                      std::size_t i) -> result<shard_actor> {
      *failed = node;
      auto made = restrict_part(s, node, (*held)[i], parent, spec_of(i), layouts[i], compact, features);
      if (!made)
        return made.error();
      return take_restricted(s, node, std::move(*made), rows[i], "part " + std::to_string(i + 1), *bounds);
    };
    return cluster_objective(sibling_of(*state), compact, lambda, now, layouts, blocks, rows, bounds, timeout,
                             without_trees(log), std::move(spawn));
  }

  /// A part's working-set shard on `node`: a restriction of the run's newest shard of it there;
  /// when there is none (or the node says it is gone), of one the sibling `s` reads there first.
  static result<cluster::impl::part_reply> restrict_part(cluster::impl& s, std::size_t node,
                                                         const std::vector<held_part>& made,
                                                         const access_token& parent, const part_shard_spec& part,
                                                         const block_layout& layout,
                                                         const model::model_shape& compact,
                                                         const std::vector<std::int64_t>& features) {
    auto answer = restrict_held(s, node, made, parent, compact, features, layout);
    if (answer || answer.error().message().find(not_a_source) == std::string::npos)
      return answer;
    auto full = s.spawn_part_on(node, part);
    if (!full)
      return full.error();
    return s.restrict_on(node, shard_restriction{full->shard, s.token, compact, features, layout});
  }
};

} // namespace

result<cluster::impl::part_reply> restrict_held(cluster::impl& s, std::size_t node, const std::vector<held_part>& made,
                                                const access_token& parent, const model::model_shape& compact,
                                                const std::vector<std::int64_t>& features, const block_layout& layout) {
  const auto there = std::find_if(made.rbegin(), made.rend(), [&](const held_part& p) { return p.node == node; });
  if (there == made.rend())
    return fail_runtime(std::string{"node "} + s.info[node].endpoint.text() + ": " + not_a_source);
  return s.restrict_on(node, shard_restriction{there->shard, parent, compact, features, layout});
}

result<shard_actor> take_restricted(const cluster::impl& s, std::size_t node, cluster::impl::part_reply made,
                                    std::int64_t rows, const std::string& what, model::data_bounds& bounds) {
  if (made.rows != rows)
    return fail_runtime("node " + s.info[node].endpoint.text() + " restricted " + std::to_string(made.rows)
                        + " rows of " + what + ", which has " + std::to_string(rows));
  model::data_bounds reported{made.feature_max.map(), made.max_label, bounds.block_rows, 0};
  reported.max_row_norm = made.max_row_norm;
  bounds += reported;
  return std::move(made.shard);
}

result<cluster::node_local_run>
cluster::read_on_nodes(const model::model_shape& architecture, std::int64_t classes, double lambda,
                       const io::part_request& data, io::scale_mode mode, bool standardize,
                       const std::vector<std::size_t>& plan, std::chrono::milliseconds timeout,
                       std::function<void(const std::string&)> log, bool leave_out_unused) {
  auto& s = *impl_;
  const auto parts = static_cast<std::int64_t>(plan.size());
  // Copies, not references: the shard factory below outlives this call.
  auto part = [data, parts](std::size_t i) {
    auto request = data;
    request.part = static_cast<std::int64_t>(i);
    request.parts = parts;
    return request;
  };
  // Summaries first: encoding and scaling must come from the whole dataset. Part 1 goes first: for
  // dense text it fixes the field count that the other parts are checked against.
  std::vector<io::part_summary> summaries;
  std::int64_t dense_features = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    auto request = part(i);
    if (dense_features > 0)
      request.options.features = dense_features;
    auto summary = s.ask<summary_message>(plan[i], "reading a part", [&](std::uint64_t round) {
      s.self->send(s.nodes[plan[i]], scan_atom::value, round, s.token, part_message{request});
    });
    if (!summary)
      return summary.error().with_context("reading part " + std::to_string(i + 1));
    if (i == 0 && !summary->summary.bounds.sparse)
      dense_features = summary->summary.cols;
    summaries.push_back(std::move(summary->summary));
  }
  // Standardising: every part's exact moments on the grid of the merged bounds, asked of its node.
  auto moments = [&](std::size_t i, const io::moment_grid& grid) -> result<io::feature_moments> {
    auto request = part(i);
    if (dense_features > 0)
      request.options.features = dense_features;
    auto answer = s.ask<moments_message>(plan[i], "taking a part's moments", [&](std::uint64_t round) {
      s.self->send(s.nodes[plan[i]], moments_atom::value, round, s.token, moments_request{request, grid});
    });
    if (!answer)
      return answer.error();
    return std::move(answer->moments);
  };
  auto fitted = io::fit_parts(architecture.kind, classes, summaries, mode, standardize, data.spec, moments);
  if (!fitted)
    return fitted.error();
  model::model_shape shape{architecture.kind, fitted->features, fitted->labels.outputs(),
                           architecture.hidden, architecture.act};
  // Columns no part stores, left out as the driver leaves them out of data it holds: the same
  // map, from the parts' counts of stored values.
  std::optional<io::column_map> columns;
  if (leave_out_unused && !shape.is_network()) {
    Eigen::VectorXd stored = Eigen::VectorXd::Zero(fitted->features);
    bool sparse = false;
    for (const auto& summary : summaries) {
      const auto c = std::min<Eigen::Index>(summary.bounds.stored.size(), stored.size());
      stored.head(c) += summary.bounds.stored.head(c);
      sparse = sparse || summary.bounds.sparse;
    }
    columns = io::used_columns(stored, sparse);
    if (columns && columns->used.empty())  // no stored value anywhere: the parts as they are
      columns.reset();
    if (columns)
      shape.features = static_cast<std::int64_t>(columns->used.size());
  }
  auto used = std::make_shared<const std::vector<std::int32_t>>(columns ? columns->used : std::vector<std::int32_t>{});
  // Text parts are byte ranges: each part after the first gives the examples before its first
  // block boundary to its predecessor, so that every part holds whole canonical blocks at their
  // global places and the sums are the bits of any other part count (or of shipped data).
  const auto block_rows = model::block_rows_for(fitted->rows);
  std::vector<std::int64_t> rows;
  for (const auto& summary : summaries)
    rows.push_back(summary.rows);
  auto shifts = io::block_aligned_shifts(rows, block_rows);
  if (shifts.empty()) {
    shifts.assign(rows.size(), {0, 0});
    if (log)
      log("parts of fewer examples than a block (" + std::to_string(block_rows)
          + "): read as their bytes say, so the sums' last bits depend on the part count");
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i] += shifts[i].second - shifts[i].first;
  std::vector<std::int64_t> blocks;
  const auto layouts = layouts_of(rows, block_rows, blocks);
  auto spec_of = [=, full_features = fitted->features](std::size_t i) {
    auto request = part(i);
    request.skip = shifts[i].first;
    request.extra = shifts[i].second;
    return part_shard_spec{request,     shape, fitted->labels, fitted->scaling, layouts[i],
                           used->empty() ? 0 : full_features, *used};
  };
  // Every part's bounds, from the nodes' replies (and again from a recreated shard's).
  auto bounds = std::make_shared<model::data_bounds>(
    model::data_bounds{{}, 0, layouts.empty() ? 1 : layouts.front().block_rows, 0});
  for (const auto count : blocks)
    bounds->blocks += count;
  // Sparse parts are summed term by term, on grids with room for the packed words (exact_sum.hpp).
  for (const auto& summary : summaries)
    if (summary.bounds.sparse)
      bounds->bits = model::packed_bits;
  // Each part's shard as the run holds it now (working sets restrict them on their nodes).
  auto held = std::make_shared<held_parts>(plan.size());
  const auto empty_bounds = *bounds;
  spawn_fn spawn = [spec_of, rows, bounds, held](impl& c, std::size_t node,
                                                 std::size_t i) -> result<shard_actor> {
    auto shard = c.spawn_part_on(node, spec_of(i));
    if (!shard)
      return shard.error();
    if (shard->rows != rows[i])
      return fail_runtime("node " + c.info[node].endpoint.text() + " read " + std::to_string(shard->rows)
                  + " rows of part " + std::to_string(i + 1) + ", where its summary and the block alignment make "
                  + std::to_string(rows[i]));
    model::data_bounds reported{shard->feature_max.map(), shard->max_label, bounds->block_rows, 0};
    reported.max_row_norm = shard->max_row_norm;
    *bounds += reported;
    (*held)[i].push_back(held_part{node, shard->shard});
    return std::move(shard->shard);
  };
  auto objective = cluster_objective(impl_, shape, lambda, plan, layouts, blocks, rows, bounds,
                                     timeout, log, spawn);
  if (!objective)
    return objective.error();
  objective->restrict_through(nullptr, part_working_sets{impl_, held, peers_of(plan, s.info.size(), s.per_node),
                                                          plan, spec_of, layouts, blocks, rows, empty_bounds,
                                                          lambda, timeout, std::move(log)});
  std::int64_t feature_bytes = 0;
  bool sparse = false;
  for (const auto& summary : summaries) {
    feature_bytes += static_cast<std::int64_t>(summary.bounds.stored.sum()) * (summary.bounds.sparse ? 8 : 4);
    sparse = sparse || summary.bounds.sparse;
  }
  return node_local_run{std::move(*objective), shape,  fitted->labels, fitted->scaling, fitted->rows,
                        feature_bytes,           sparse, fitted->hashing, std::move(columns)};
}

} // namespace shardopt::actors

#include "actors/driver/cluster_impl.hpp"

#include "io/splits.hpp"

namespace shardopt::actors {

result<cluster::node_local_run>
cluster::read_on_nodes(const model::model_shape& architecture, std::int64_t classes, double lambda,
                       const io::part_request& data, io::scale_mode mode, bool standardize,
                       const std::vector<std::size_t>& plan, std::chrono::milliseconds timeout,
                       std::function<void(const std::string&)> log) {
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
  const model::model_shape shape{architecture.kind, fitted->features, fitted->labels.outputs(),
                                 architecture.hidden, architecture.act};
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
  auto spec_of = [=](std::size_t i) {
    auto request = part(i);
    request.skip = shifts[i].first;
    request.extra = shifts[i].second;
    return part_shard_spec{request, shape, fitted->labels, fitted->scaling, layouts[i]};
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
  spawn_fn spawn = [spec_of, rows, bounds](impl& c, std::size_t node,
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
    return std::move(shard->shard);
  };
  auto objective = cluster_objective(impl_, shape, lambda, plan, layouts, blocks, rows, bounds,
                                     timeout, std::move(log), spawn);
  if (!objective)
    return objective.error();
  std::int64_t feature_bytes = 0;
  bool sparse = false;
  for (const auto& summary : summaries) {
    feature_bytes += static_cast<std::int64_t>(summary.bounds.stored.sum()) * (summary.bounds.sparse ? 8 : 4);
    sparse = sparse || summary.bounds.sparse;
  }
  return node_local_run{std::move(*objective), shape, fitted->labels, fitted->scaling,
                        fitted->rows, feature_bytes, sparse, fitted->hashing};
}

} // namespace shardopt::actors

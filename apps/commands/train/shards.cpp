#include "apps/commands/train/shards.hpp"

#include "actors/driver/placement.hpp"
#include "io/partition.hpp"

#include <cstdio>

namespace shardopt::apps {

namespace {

/// "shards 0-3" or "shards 4" or "no shards".
std::string shard_list(const std::vector<std::size_t>& plan, std::size_t node) {
  std::size_t first = plan.size();
  std::size_t last = 0;
  for (std::size_t i = 0; i < plan.size(); ++i)
    if (plan[i] == node) {
      first = std::min(first, i);
      last = i;
    }
  if (first == plan.size())
    return "no shards";
  return first == last ? "shard " + std::to_string(first)
                       : "shards " + std::to_string(first) + "-" + std::to_string(last);
}

/// Shards own whole canonical blocks (model/exact_sum.hpp): at most one shard per block.
result<void> check_shard_count(int shards, std::int64_t rows) {
  const auto blocks = model::block_count(rows, model::block_rows_for(rows));
  if (shards > blocks)
    return fail_invalid("--shards " + std::to_string(shards) + ": more shards than the "
                + std::to_string(blocks) + " blocks of the " + std::to_string(rows)
                + " training examples");
  return {};
}

} // namespace

result<shard_setup> setup_shards(actors::runtime& rt, const shard_options& options,
                                 prepared_data& data, const data_options& source,
                                 const model::model_shape& architecture, std::int64_t classes,
                                 double lambda) {
  shard_setup setup;
  const bool node_local = options.placement == data_placement::node_local;
  if (node_local && options.nodes.empty())
    return fail_invalid("--data-placement node-local needs --nodes");
  const auto n = data.train_rows;
  if (options.nodes.empty()) {
    setup.shards = options.shards > 0 ? options.shards : static_cast<int>(rt.worker_threads());
    if (auto ok = check_shard_count(setup.shards, n); !ok)
      return ok.error();
    setup.objective = actors::sharded_objective::local(
      rt, data.shape, lambda, data.train, io::partition_blocks(n, setup.shards), options.timeout);
    return setup;
  }

  auto endpoints = actors::parse_endpoints(options.nodes);
  if (!endpoints)
    return endpoints.error();
  // A node that cannot be reached or refuses a driver is a failed run, not bad input.
  auto cluster = actors::cluster::connect(rt, *endpoints);
  if (!cluster)
    return cluster.error();
  // With TLS, nodes in a tree must trust each other's certificates (ca-driver-node.pem), and a node
  // whose certificate another refuses breaks CAF 0.17's links to it: `auto` stays a star there.
  const bool tls = rt.options().tls.enabled();
  if (!options.nodes_file.empty())
    cluster->watch_nodes_file(options.nodes_file);
  if (!options.nodes_dns.empty())
    cluster->watch_nodes_dns(options.nodes_dns);
  cluster->use_topology(options.topology == actors::topology::automatic && tls
                          ? actors::topology::star
                          : options.topology,
                        options.fan_in);
  std::vector<std::uint32_t> threads;
  for (const auto& node : cluster->nodes())
    threads.push_back(node.threads);
  std::uint32_t total_threads = 0;
  for (auto t : threads)
    total_threads += t;
  setup.shards = options.shards > 0 ? options.shards : static_cast<int>(std::max(1u, total_threads));
  if (!node_local)
    if (auto ok = check_shard_count(setup.shards, n); !ok)
      return ok.error();
  const auto plan = actors::place_shards(threads, static_cast<std::size_t>(setup.shards));
  if (!options.quiet)
    for (std::size_t j = 0; j < cluster->nodes().size(); ++j) {
      const auto& node = cluster->nodes()[j];
      std::fprintf(stderr, "placement: node %s (%s, %u threads): %s\n",
                   node.endpoint.text().c_str(), node.host.c_str(), node.threads,
                   shard_list(plan, j).c_str());
    }
  const bool quiet = options.quiet;
  auto log = [quiet](const std::string& event) {
    if (!quiet)
      std::fprintf(stderr, "cluster: %s\n", event.c_str());
  };
  if (node_local) {
    auto read = read_options_of(source);
    if (!read)
      return read.error();
    auto mode = scale_mode_of(source);
    if (!mode)
      return mode.error();
    auto run = cluster->read_on_nodes(architecture, classes, lambda, io::part_request{source.data, *read, 0, 1},
                                      *mode, source.standardize, plan, options.timeout, log,
                                      data.leave_out_unused);
    if (!run)
      return run.error();
    data.shape = run->shape;
    data.labels = std::move(run->labels);
    data.scaling = std::move(run->scaling);
    data.train_rows = run->rows;
    data.feature_bytes = run->feature_bytes;
    data.sparse = run->sparse;
    data.train_source = source.data + " (read on the nodes)";
    data.hashing = run->hashing;
    data.columns = std::move(run->columns);
    setup.objective = std::move(run->objective);
  } else {
    auto objective = cluster->ship(data.shape, lambda, data.train,
                                   io::partition_blocks(n, setup.shards), plan, options.timeout, log);
    if (!objective)
      return objective.error();
    setup.objective = std::move(*objective);
  }
  setup.cluster = std::move(*cluster);
  return setup;
}

} // namespace shardopt::apps

#include "apps/serving/service_metrics.hpp"

#include "actors/wire/messages.hpp"
#include "actors/wire/ps_protocol.hpp"

#include <chrono>
#include <fstream>
#include <map>
#include <unistd.h>

namespace shardopt::apps {

namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

/// Builds families one sample at a time; samples of one name (different labels) share a family.
class families {
public:
  families& gauge(const std::string& name, const std::string& help, double value,
                  std::vector<prometheus::ClientMetric::Label> labels = {}) {
    auto& metric = add(name, help, MetricType::Gauge, std::move(labels));
    metric.gauge.value = value;
    return *this;
  }

  families& counter(const std::string& name, const std::string& help, double value,
                    std::vector<prometheus::ClientMetric::Label> labels = {}) {
    auto& metric = add(name, help, MetricType::Counter, std::move(labels));
    metric.counter.value = value;
    return *this;
  }

  std::vector<MetricFamily> take() { return std::move(out_); }

private:
  prometheus::ClientMetric& add(const std::string& name, const std::string& help, MetricType type,
                                std::vector<prometheus::ClientMetric::Label> labels) {
    auto [at, added] = index_.emplace(name, out_.size());
    if (added)
      out_.push_back(MetricFamily{name, help, type, {}});
    auto& family = out_[at->second];
    family.metric.emplace_back();
    family.metric.back().label = std::move(labels);
    return family.metric.back();
  }

  std::vector<MetricFamily> out_;
  std::map<std::string, std::size_t> index_;
};

double load(const std::atomic<std::int64_t>& value) {
  return static_cast<double>(value.load(std::memory_order_relaxed));
}

/// This process's resident memory, from /proc (0 where there is none).
double resident_bytes() {
  std::ifstream statm{"/proc/self/statm"};
  long long pages = 0;
  long long resident = 0;
  if (!(statm >> pages >> resident))
    return 0;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

/// A driver row's numeric keys and the metrics they become.
struct row_metric {
  const char* key;
  const char* name;
  const char* help;
  bool counter;
};

constexpr row_metric lbfgs_rows[] = {
  {"iteration", "shardopt_driver_iteration", "Iterations accepted", false},
  {"objective", "shardopt_driver_objective", "Objective at the last accepted iterate", false},
  {"grad_norm", "shardopt_driver_gradient_norm", "Euclidean norm of its (pseudo-)gradient", false},
  {"grad_norm_inf", "shardopt_driver_gradient_norm_inf", "Largest |entry| of its (pseudo-)gradient", false},
  {"step", "shardopt_driver_step_length", "Length of the last step", false},
  {"evaluations", "shardopt_driver_evaluations_total", "Loss and gradient evaluations over the shards", true},
  {"hessian_products", "shardopt_driver_hessian_products_total", "Hessian-vector products over the shards", true},
  {"nonzero_weights", "shardopt_driver_nonzero_weights", "Penalised weights that are not zero (--l1)", false},
  {"seconds", "shardopt_driver_run_seconds", "Seconds since the run started", false},
};

constexpr row_metric ps_rows[] = {
  {"step", "shardopt_driver_global_step", "Global step of the parameter-server job", false},
  {"loss", "shardopt_driver_loss", "Mean minibatch loss since the last log step", false},
  {"steps_per_second", "shardopt_driver_steps_per_second", "Global steps per second", false},
  {"examples_per_second", "shardopt_driver_examples_per_second", "Examples per second", false},
  {"dropped_gradients", "shardopt_driver_dropped_gradients_total", "Stale gradients dropped", true},
  {"staleness_max", "shardopt_driver_staleness_max", "Largest staleness of an applied gradient", false},
  {"seconds", "shardopt_driver_run_seconds", "Seconds since the run started", false},
};

} // namespace

void driver_progress::record(const nlohmann::json& row) {
  std::lock_guard<std::mutex> lock{mutex_};
  row_ = row;
}

nlohmann::json driver_progress::latest() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return row_;
}

std::string driver_progress::unready() const {
  if (finished_)
    return "the run is over";
  if (!connected_)
    return "starting: its data, shards or parameter servers are not ready yet";
  return {};
}

std::vector<MetricFamily> process_metrics(const std::string& role) {
  const auto wire = actors::wire_bytes();
  return families{}
    .gauge("shardopt_info", "This process: its role and versions", 1,
           {{"role", role}, {"version", SHARDOPT_VERSION},
            {"protocol", std::to_string(actors::protocol_version)}})
    .gauge("shardopt_process_resident_memory_bytes", "Resident memory of this process", resident_bytes())
    .counter("shardopt_wire_sent_bytes_total",
             "Vectors, sums and data this process sent over the network (payload bytes)",
             static_cast<double>(wire.sent))
    .counter("shardopt_wire_received_bytes_total",
             "Vectors, sums and data this process received over the network (payload bytes)",
             static_cast<double>(wire.received))
    .take();
}

std::vector<MetricFamily> node_metrics(const actors::node_counters& c) {
  families out;
  out.gauge("shardopt_node_drivers", "Drivers holding shards or data here", load(c.drivers))
    .gauge("shardopt_node_shards", "Shards held (data arriving in pieces included)", load(c.shards))
    .gauge("shardopt_node_held_bytes", "Bytes of shard data and buffers held, staged data included", load(c.bytes_held))
    .gauge("shardopt_node_staged_bytes", "Bytes of data still arriving in pieces", load(c.staged_bytes))
    .gauge("shardopt_node_draining", "1 while the node drains (takes no new drivers)",
           c.draining.load() ? 1 : 0);
  const std::pair<const char*, const std::atomic<std::int64_t>*> served[] = {
    {"loss_gradient", &c.evaluations}, {"hessian_vector", &c.products}, {"quality", &c.qualities}, {"line", &c.lines}};
  for (const auto& [kind, count] : served)
    out.counter("shardopt_node_evaluations_total", "Requests its shards answered, by kind", load(*count),
                {{"kind", kind}});
  out.counter("shardopt_node_restrictions_total", "Shards made by restricting another to some columns (working sets)",
              load(c.restrictions));
  out.counter("shardopt_node_busy_seconds_total", "Seconds its shards spent computing answers",
              load(c.busy_nanoseconds) * 1e-9)
    .gauge("shardopt_node_last_evaluation_seconds", "Computing time of the latest loss and gradient",
           load(c.last_evaluation_nanoseconds) * 1e-9)
    .gauge("shardopt_node_last_evaluation_timestamp_seconds",
           "When the latest loss and gradient was answered (Unix time; 0: none yet)",
           load(c.last_evaluation_unix_ms) * 1e-3);
  for (std::size_t r = 0; r < static_cast<std::size_t>(actors::node_request::count); ++r)
    for (std::size_t why = 0; why < static_cast<std::size_t>(actors::refusal_reason::count); ++why) {
      const auto request = static_cast<actors::node_request>(r);
      const auto reason = static_cast<actors::refusal_reason>(why);
      out.counter("shardopt_node_refusals_total", "Requests answered with an error, by request and reason",
                  static_cast<double>(c.refused(request, reason)),
                  {{"request", std::string{actors::to_string(request)}},
                   {"reason", std::string{actors::to_string(reason)}}});
    }
  return out.take();
}

std::vector<MetricFamily> driver_metrics(const driver_progress& progress) {
  const auto row = progress.latest();
  families out;
  out.gauge("shardopt_driver_ready", "1 while the run is connected and not over",
            progress.unready().empty() ? 1 : 0);
  const bool ps = row.contains("loss");  // a parameter-server job's row, not an iteration's
  const auto* first = ps ? std::begin(ps_rows) : std::begin(lbfgs_rows);
  const auto* last = ps ? std::end(ps_rows) : std::end(lbfgs_rows);
  for (const auto* metric = first; metric != last; ++metric) {
    const auto value = row.find(metric->key);
    if (value == row.end() || !value->is_number())
      continue;
    if (metric->counter)
      out.counter(metric->name, metric->help, value->get<double>());
    else
      out.gauge(metric->name, metric->help, value->get<double>());
  }
  if (!ps && row.contains("evaluations"))
    out.counter("shardopt_driver_passes_total", "Passes over the data: evaluations and products",
                row.value("evaluations", 0.0) + row.value("hessian_products", 0.0));
  return out.take();
}

std::vector<MetricFamily> ps_metrics(const actors::ps_stats* stats) {
  families out;
  out.gauge("shardopt_ps_running", "1 while it serves a job: initialised by its chief, not over",
            stats ? 1 : 0);
  if (stats)
    out.gauge("shardopt_ps_step", "Global step", static_cast<double>(stats->step))
      .counter("shardopt_ps_gradients_applied_total", "Gradients applied", static_cast<double>(stats->applied))
      .counter("shardopt_ps_gradients_dropped_total", "Stale gradients dropped (synchronous mode)",
               static_cast<double>(stats->dropped))
      .gauge("shardopt_ps_staleness_max", "Largest staleness of an applied gradient",
             static_cast<double>(stats->staleness_max))
      .counter("shardopt_ps_examples_total", "Examples behind the applied gradients",
               static_cast<double>(stats->examples));
  return out.take();
}

endpoint_sources driver_sources(const driver_progress& progress, const std::string& role, bool rows) {
  return {[&progress, role, rows] {
            return joined(process_metrics(role), rows ? driver_metrics(progress) : std::vector<MetricFamily>{});
          },
          [&progress] { return progress.unready(); }};
}

row_hook recording(driver_progress& progress, row_hook then) {
  return [&progress, then = std::move(then)](const nlohmann::json& row) {
    progress.record(row);
    return !then || then(row);
  };
}

std::vector<MetricFamily> joined(std::vector<MetricFamily> a, std::vector<MetricFamily> b) {
  a.insert(a.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
  return a;
}

} // namespace shardopt::apps

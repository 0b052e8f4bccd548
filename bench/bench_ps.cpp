// Parameter-server benchmarks (issue 4): throughput of softmax on Fashion-MNIST, batches of 128,
// plain SGD, in one process and across processes on loopback, synchronous and asynchronous; and a
// straggler run: 4 workers with 1 backup, one of them slowed 5x (target: sync throughput drops by
// at most 15%). Each run's steps/s and examples/s are recorded for the summary table.
//   BM_ps_local/W/S     W workers and 1 PS actor in this process; S = 1 synchronous, 0 asynchronous
//   BM_ps_processes/W/S the same job as 1 PS task and W worker tasks (processes) on loopback
//   BM_ps_straggler/F   4 synchronous workers, 3 gradients per step (1 backup); worker 3 slowed Fx

#include "bench/fixtures.hpp"

#include "actors/ps/ps_worker.hpp"
#include "support/process.hpp"

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>


namespace {

using namespace shardopt;

actors::ps_job bench_job(std::uint32_t workers, bool sync, std::int64_t steps) {
  actors::ps_job job;
  job.shape = bench::fashion().shape;
  job.lambda = 1e-4;
  job.rule.kind = optimizer::update_kind::sgd;
  job.rule.rate.initial = 0.05;
  job.batch_size = 128;
  job.sync = sync;
  job.workers = workers;
  job.replicas_to_aggregate = workers;
  job.last_step = steps;
  return job;
}

/// Records a finished run: time per step for Google Benchmark, steps/s and examples/s for the table.
void report(benchmark::State& state, const std::string& name, double seconds, double steps, double examples) {
  state.SetIterationTime(seconds / steps);
  bench::record(name + " steps/s", steps / seconds);
  bench::record(name + " examples/s", examples / seconds);
  state.counters["steps/s"] = steps / seconds;
  state.counters["examples/s"] = examples / seconds;
}

void run_local(benchmark::State& state, const std::string& name, actors::ps_job job, int slow, double slowdown) {
  for (auto _ : state) {
    auto outcome = actors::run_local_job(bench::runtime(), job, 1, bench::fashion().train, {}, slow, slowdown);
    if (!outcome) {
      state.SkipWithError(outcome.error().message().c_str());
      return;
    }
    report(state, name, outcome->seconds, static_cast<double>(outcome->step),
           static_cast<double>(outcome->stats.examples));
  }
}

void BM_ps_local(benchmark::State& state) {
  const auto workers = static_cast<std::uint32_t>(state.range(0));
  const bool sync = state.range(1) != 0;
  run_local(state, "local " + std::to_string(workers) + (sync ? " sync" : " async"),
            bench_job(workers, sync, sync ? 1000 : 3000), -1, 1);
}

void BM_ps_straggler(benchmark::State& state) {
  auto job = bench_job(4, true, 1000);
  job.replicas_to_aggregate = 3;
  job.batch_size = 1024;  // the gradient, not messaging, dominates a step
  const double factor = static_cast<double>(state.range(0));
  run_local(state, "straggler " + std::to_string(state.range(0)) + "x", job, factor > 1 ? 3 : -1, factor);
}

void BM_ps_processes(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const bool sync = state.range(1) != 0;
  const auto binary = std::string{SHARDOPT_BINARY_DIR} + "/apps/shardopt";
  for (auto _ : state) {
    const auto ps_hosts = "127.0.0.1:" + std::to_string(test::free_port());
    std::string worker_hosts;
    for (int w = 0; w < workers; ++w)
      worker_hosts += (w ? "," : "") + std::string{"127.0.0.1:"} + std::to_string(test::free_port());
    auto args = [&](const std::string& job, int index) {
      std::vector<std::string> a{binary, "ps-task", "--ps_hosts=" + ps_hosts, "--worker_hosts=" + worker_hosts,
                                 "--job_name=" + job, "--task_index=" + std::to_string(index),
                                 "--lr", "0.05", "--batch-size", "128", "--last-step", sync ? "1000" : "3000",
                                 "--threads", "1", "--quiet", "--json"};
      if (sync)
        a.push_back("--sync");
      return a;
    };
    std::vector<std::unique_ptr<test::background_process>> tasks;
    tasks.push_back(std::make_unique<test::background_process>(args("ps", 0)));
    for (int w = 1; w < workers; ++w)
      tasks.push_back(std::make_unique<test::background_process>(args("worker", w)));
    const auto chief = test::run(args("worker", 0), std::chrono::seconds{300});
    if (chief.exit_code != 0) {
      state.SkipWithError(("chief failed: " + chief.err).c_str());
      return;
    }
    const auto summary = nlohmann::json::parse(chief.out);
    const auto seconds = summary["seconds"].get<double>();
    report(state, "processes " + std::to_string(workers) + (sync ? " sync" : " async"), seconds,
           summary["steps"].get<double>(), summary["examples_per_second"].get<double>() * seconds);
    for (auto& task : tasks)
      task->wait(std::chrono::seconds{30});
  }
}

BENCHMARK(BM_ps_local)->ArgsProduct({{1, 2, 4}, {1, 0}})->Iterations(1)->Repetitions(3)->UseManualTime()
  ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ps_processes)->ArgsProduct({{1, 2, 4}, {1, 0}})->Iterations(1)->Repetitions(1)->UseManualTime()
  ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ps_straggler)->Arg(1)->Arg(5)->Iterations(1)->Repetitions(3)->UseManualTime()
  ->Unit(benchmark::kMicrosecond);

} // namespace

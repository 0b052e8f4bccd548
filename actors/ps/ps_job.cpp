// A whole parameter-server job in one process: parameter servers and worker actors.

#include "actors/ps/ps_worker.hpp"

#include "io/partition.hpp"

namespace shardopt::actors {

result<ps_outcome> run_local_job(runtime& rt, const ps_job& options, std::uint32_t ps_count,
                                 std::shared_ptr<const model::dataset> train,
                                 const chief_options& chief, int slow_worker, double slowdown) {
  auto& system = rt.system();
  auto job = options;
  job.token = access_token::random();  // this run's capability, shared by its own actors only
  ps_group group;
  for (std::uint32_t j = 0; j < ps_count; ++j) {
    group.servers.push_back(spawn_parameter_server(system, job.token));
    group.names.push_back("ps " + std::to_string(j));
  }
  const auto blocks = io::partition_rows(train->rows(), job.workers);
  // `self` runs the chief; `waiter` watches every actor of the job end (the chief's link consumes
  // the PSs' down messages it sees).
  caf::scoped_actor self{system};
  caf::scoped_actor waiter{system};
  for (auto& server : group.servers)
    waiter->monitor(server);
  auto task_of = [&](std::uint32_t w) {
    worker_task task{w, train, blocks[w], 1.0};
    if (static_cast<int>(w) == slow_worker)
      task.slowdown = slowdown;
    return task;
  };
  std::vector<caf::actor> workers;
  for (std::uint32_t w = 1; w < job.workers; ++w) {
    workers.push_back(system.spawn([group, job, task = task_of(w)](caf::blocking_actor* me) {
      // A failure here reaches the chief through the PSs (psfail) or as a missing gradient.
      (void)run_worker(me, group, job, task, nullptr);
    }));
    waiter->monitor(workers.back());
  }
  const auto chief_task = task_of(0);
  auto outcome = run_worker(self.ptr(), group, job, chief_task, &chief);
  if (!outcome) {
    // Make sure nothing is left running: the PSs release the workers once they fail.
    for (auto& server : group.servers)
      self->send(server, psfail_atom::value, std::uint64_t{0}, job.token, outcome.error().message());
    for (auto& server : group.servers)
      self->send(server, psstop_atom::value, std::uint64_t{0}, job.token);
  }
  // Every worker and PS ends by itself; wait for all of them.
  auto left = group.servers.size() + workers.size();
  bool timed_out = false;
  while (left > 0 && !timed_out)
    waiter->receive([&](caf::down_msg&) { --left; },
                  caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; },
                  caf::after(std::chrono::seconds{60}) >> [&] { timed_out = true; });
  if (timed_out) {
    for (auto& w : workers)
      waiter->send_exit(w, caf::exit_reason::user_shutdown);
    for (auto& server : group.servers)
      waiter->send_exit(server, caf::exit_reason::user_shutdown);
    if (outcome)
      return fail_invalid("the workers and parameter servers did not finish within 60 s of the chief");
  }
  return outcome;
}

} // namespace shardopt::actors

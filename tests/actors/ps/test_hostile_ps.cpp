// A hostile client built on the project's own wire protocol (CAF, the real parameter-server
// interface, over loopback) attacks a parameter-server process while an honest job runs in this
// process: every attack is refused, the PS keeps serving, and the honest job ends with exactly the
// theta of an undisturbed job. Every process the test starts is stopped by it.

#include "actors/ps/parameter_server.hpp"
#include "actors/ps/ps_worker.hpp"
#include "support/hostile.hpp"
#include "support/problems.hpp"
#include "support/process.hpp"
#include "support/sockets.hpp"

#include <doctest/doctest.h>

#include <caf/all.hpp>

#include <cstring>
#include <future>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
using shardopt::test::background_process;
using shardopt::test::contains;
using shardopt::test::error_of;
using shardopt::test::network_runtime;
using namespace std::chrono_literals;

namespace {

using shardopt::test::hostile_shape;
/// How the honest PS job's workers describe their model in a hello (lambda 1e-3).
const std::string job_model = model::describe(hostile_shape) + ", lambda 0.001";

/// A `shardopt ps-task --job_name ps` on 127.0.0.1 (one PS of a job with one worker).
struct ps_process {
  ps_process() : port(shardopt::test::free_port()) {
    process = std::make_unique<background_process>(std::vector<std::string>{
      shardopt::test::shardopt_binary(), "ps-task", "--ps_hosts", endpoint().text(), "--worker_hosts",
      "127.0.0.1:1", "--job_name", "ps", "--task_index", "0", "--startup-timeout", "120",
      "--job-token", "the honest job"});
    // No wait here: connecting retries a refused connection until the PS listens.
  }
  actors::endpoint endpoint() const { return {"127.0.0.1", static_cast<std::uint16_t>(port)}; }
  int port;
  std::unique_ptr<background_process> process;
};

actors::ps_job honest_job() {
  actors::ps_job job;
  job.shape = hostile_shape;
  job.lambda = 1e-3;
  job.rule.kind = shardopt::optimizer::update_kind::adam;
  job.rule.rate.initial = 0.01;
  job.batch_size = 32;
  job.sync = true;
  job.workers = 1;
  job.replicas_to_aggregate = 1;
  job.last_step = 300;
  job.seed = 5;
  job.token = actors::access_token::from_text("the honest job");
  return job;
}

} // namespace


TEST_CASE("a hostile client cannot join, steer or stop a parameter server, and the honest job's "
          "theta is unchanged") {
  const auto data = shardopt::test::random_problem(3, 800, 20, 3);
  const auto job = honest_job();
  const actors::worker_task task{0, data, {0, 800}, 1.0};
  // The chief's log hook at step 100 holds training (the only worker, synchronous) until the
  // attacks are over, so they meet a running PS whatever the timing.
  std::promise<void> reached;
  std::promise<void> attacked_all;
  auto resume = attacked_all.get_future();
  bool hold = false;
  actors::chief_options chief;
  chief.log_steps = 100;
  chief.log = [&](const actors::step_log& row) {
    if (hold && row.step == 100) {
      reached.set_value();
      resume.wait();
    }
  };
  auto rt = network_runtime();
  auto train = [&](const actors::endpoint& where) {
    auto group = actors::connect_parameter_servers(rt, {where}, 30s);
    REQUIRE_MESSAGE(group.ok(), group.error().message());
    return actors::run_remote_worker(rt, *group, job, task, &chief);
  };
  ps_process quiet;
  auto undisturbed = train(quiet.endpoint());
  REQUIRE_MESSAGE(undisturbed.ok(), undisturbed.error().message());
  CHECK(quiet.process->wait(30s).exit_code == 0);

  ps_process server;
  auto connected =
    actors::connect_to<actors::ps_actor>(rt, server.endpoint(), "a shardopt parameter server", 30s);
  REQUIRE(connected.ok());
  const auto ps = *connected;
  caf::scoped_actor self{rt.system()};
  // Before the chief: a leftover worker of another job, another version, a non-chief init, and an
  // attempt to take index 0 first: all refused, so the chief finds the PS untouched.
  const auto stale_token = actors::access_token::from_text("an earlier job");
  std::vector<std::string> early{
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), stale_token, 0, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{999, actors::wire_probe(), job.token, 3, job_model}),
    error_of(self, ps, actors::psinit_atom::value, std::uint64_t{1}, stale_token, actors::ps_config{},
             actors::ps_snapshot{}),
    error_of(self, ps, actors::psfail_atom::value, std::uint64_t{1}, stale_token, std::string{"boom"}),
  };
  CHECK(contains(early[0], "another job's token"));
  CHECK(contains(early[1], "version 999"));
  CHECK(contains(early[2], "only the chief"));
  CHECK(contains(early[3], "outside the job"));

  hold = true;
  auto honest = std::async(std::launch::async, [&] { return train(server.endpoint()); });
  reached.get_future().wait();  // the chief is at step 100 and waits for us
  const actors::dense_vector grad{Eigen::VectorXd::Constant(hostile_shape.dimension(), 1e6)};
  std::vector<std::string> refusals{
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), job.token, 0, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), stale_token, 0, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), job.token, 7, job_model}),
    error_of(self, ps, actors::pshello_atom::value, std::uint64_t{1},
             actors::ps_hello{actors::protocol_version, actors::wire_probe(), job.token, 0,
                              "mlp 20-100-3 (tanh, softmax output), lambda 0.001"}),
    error_of(self, ps, actors::psinit_atom::value, std::uint64_t{1}, job.token, actors::ps_config{},
             actors::ps_snapshot{}),
    error_of(self, ps, actors::push_atom::value, std::uint64_t{1}, job.token, std::uint32_t{0},
             std::int64_t{0}, 1.0, std::int64_t{1}, grad),
    error_of(self, ps, actors::push_atom::value, std::uint64_t{1}, stale_token, std::uint32_t{5},
             std::int64_t{0}, 1.0, std::int64_t{1}, grad),
    error_of(self, ps, actors::clock_atom::value, std::uint64_t{1}, job.token, std::uint32_t{0},
             std::int64_t{1}),
    error_of(self, ps, actors::psstate_atom::value, std::uint64_t{1}, stale_token),
    error_of(self, ps, actors::psfail_atom::value, std::uint64_t{1}, stale_token, std::string{"boom"}),
    error_of(self, ps, actors::psfail_atom::value, std::uint64_t{1}, job.token, std::string{"boom"}),
    error_of(self, ps, actors::bye_atom::value, std::uint64_t{1}, job.token, std::uint32_t{0}),
    error_of(self, ps, actors::psstop_atom::value, std::uint64_t{1}, job.token),
  };
  const std::vector<std::string> expected{
    "already claimed", "another job's token", "not one of the job's 1 workers",
    "worker 0 trains mlp 20-100-3 (tanh, softmax output), lambda 0.001; this job trains " + job_model,
    "already initialised",
    "not worker 0 of this job", "not worker 5 of this job", "not worker 0 of this job",
    "without the job's token", "outside the job", "outside the job", "not worker 0 of this job",
    "only the chief stops"};
  REQUIRE(refusals.size() == expected.size());
  for (std::size_t i = 0; i < refusals.size(); ++i) {
    INFO(i << ": " << refusals[i]);
    CHECK(contains(refusals[i], expected[i]));
  }
  for (auto reason : {caf::exit_reason::kill, caf::exit_reason::user_shutdown}) {
    self->send_exit(ps, reason);
    caf::anon_send_exit(ps, reason);
  }
  self->send(caf::actor_cast<caf::actor>(ps), caf::make_error(caf::sec::runtime_error));
  // Still serving after the exits (processed in order after them): a refusal, not silence.
  CHECK(contains(error_of(self, ps, actors::psstate_atom::value, std::uint64_t{1}, stale_token),
                 "without the job's token"));
  attacked_all.set_value();
  auto attacked = honest.get();
  REQUIRE_MESSAGE(attacked.ok(), attacked.error().message());
  CHECK(attacked->step == undisturbed->step);
  REQUIRE(attacked->theta.size() == undisturbed->theta.size());
  CHECK(std::memcmp(attacked->theta.data(), undisturbed->theta.data(),
                    sizeof(double) * attacked->theta.size()) == 0);
  CHECK(server.process->wait(30s).exit_code == 0);
}

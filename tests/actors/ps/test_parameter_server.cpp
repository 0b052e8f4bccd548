// Parameter-server training in one process: one worker and one PS equal a plain SGD loop bit for
// bit; N synchronous workers equal large-batch SGD; checkpoints restore; NaN stops cleanly; the PS
// refuses malformed requests with errors instead of crashing.

#include "actors/ps/ps_worker.hpp"
#include "io/ps_checkpoint.hpp"
#include "io/partition.hpp"
#include "model/local_objective.hpp"
#include "support/files.hpp"
#include "support/bits.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include <cstring>
#include <random>

namespace actors = shardopt::actors;
namespace model = shardopt::model;
namespace opt = shardopt::optimizer;
namespace io = shardopt::io;
using namespace std::chrono_literals;

using shardopt::test::same_bits;

namespace {

/// A random, learnable softmax problem: labels from a hidden linear model plus noise.
std::shared_ptr<const model::dataset> make_problem(std::uint32_t seed, std::int64_t n, std::int64_t d,
                                                  std::int64_t classes) {
  std::mt19937 rng{seed};
  std::normal_distribution<float> normal;
  Eigen::MatrixXf hidden = Eigen::MatrixXf::NullaryExpr(d, classes, [&] { return normal(rng); });
  model::dense_features x(n, d);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < d; ++j)
      x(i, j) = normal(rng);
  auto data = std::make_shared<model::dataset>();
  data->y.resize(n);
  for (std::int64_t i = 0; i < n; ++i) {
    Eigen::VectorXf z = hidden.transpose() * x.row(i).transpose();
    for (auto& v : z)
      v += 0.5f * normal(rng);
    Eigen::Index best = 0;
    z.maxCoeff(&best);
    data->y[i] = static_cast<double>(best);
  }
  data->x = std::move(x);
  return data;
}

actors::ps_job small_job(std::int64_t d, std::int64_t classes, opt::update_kind kind, std::uint32_t workers) {
  actors::ps_job job;
  job.shape = {model::model_kind::softmax, d, classes};
  job.lambda = 1e-3;
  job.rule.kind = kind;
  job.rule.rate.initial = kind == opt::update_kind::adam ? 0.01 : 0.1;
  job.batch_size = 20;
  job.sync = true;
  job.workers = workers;
  job.replicas_to_aggregate = workers;
  job.last_step = 40;
  job.seed = 11;
  job.step_timeout = 60s;
  job.startup_timeout = 60s;
  return job;
}

/// A chief that checkpoints a 3-class softmax model into `directory` every `every` steps.
actors::chief_options checkpointing_chief(const std::string& directory, std::int64_t every) {
  actors::chief_options chief;
  chief.checkpoint_dir = directory;
  chief.checkpoint_steps = every;
  chief.model.labels.kind = model::model_kind::softmax;
  chief.model.labels.classes = {0, 1, 2};
  return chief;
}


/// What one worker and one PS must equal: a plain SGD loop over the worker's batches, from the
/// job's start (zero for a linear model, the seeded initialisation for a network).
Eigen::VectorXd plain_sgd(const actors::ps_job& job, const std::shared_ptr<const model::dataset>& data) {
  model::local_objective objective{job.shape, data, job.lambda};
  opt::batch_sampler sampler{data->rows(), job.batch_size, opt::worker_seed(job.seed, 0, 0)};
  Eigen::VectorXd theta = model::initial_theta(job.shape, job.seed);
  Eigen::VectorXd grad;
  auto state = opt::initial_state(job.rule, theta.size());
  for (std::int64_t t = 0; t < job.last_step; ++t) {
    objective.evaluate(theta, model::row_selection{sampler.next()}, grad);
    opt::apply_update(job.rule, t, theta, grad, state);
  }
  return theta;
}

/// What N synchronous workers must equal: SGD over the union of their batches at every step.
Eigen::VectorXd large_batch_sgd(const actors::ps_job& job, const std::shared_ptr<const model::dataset>& data,
                                std::uint32_t workers) {
  model::local_objective objective{job.shape, data, job.lambda};
  const auto blocks = io::partition_rows(data->rows(), workers);
  std::vector<opt::batch_sampler> samplers;
  for (std::uint32_t w = 0; w < workers; ++w)
    samplers.emplace_back(blocks[w].size(), job.batch_size, opt::worker_seed(job.seed, w, 0));
  Eigen::VectorXd theta = model::initial_theta(job.shape, job.seed);
  Eigen::VectorXd grad;
  auto state = opt::initial_state(job.rule, theta.size());
  for (std::int64_t t = 0; t < job.last_step; ++t) {
    std::vector<std::int64_t> union_rows;
    for (std::uint32_t w = 0; w < workers; ++w)
      for (auto i : samplers[w].next())
        union_rows.push_back(blocks[w].begin + i);
    objective.evaluate(theta, model::row_selection{union_rows}, grad);
    opt::apply_update(job.rule, t, theta, grad, state);
  }
  return theta;
}

} // namespace

TEST_CASE("one worker and one PS, synchronous, equal a plain SGD loop bit for bit") {
  const auto data = make_problem(1, 300, 6, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  for (auto kind : {opt::update_kind::sgd, opt::update_kind::momentum, opt::update_kind::nesterov,
                    opt::update_kind::adagrad, opt::update_kind::adam}) {
    CAPTURE(opt::to_string(kind));
    auto job = small_job(6, 3, kind, 1);
    job.rule.rate.kind = opt::schedule_kind::inverse_time;
    job.rule.rate.decay_steps = 10;
    auto outcome = actors::run_local_job(rt, job, 1, data, actors::chief_options{});
    REQUIRE_MESSAGE(outcome.ok(), outcome.error().message());
    CHECK(outcome->step == 40);

    // The same rule, batches and objective in a plain loop.
    CHECK(same_bits(outcome->theta, plain_sgd(job, data)));
  }
}

TEST_CASE("N synchronous workers over 2 PSs equal large-batch SGD over the union of their batches") {
  const std::uint32_t workers = 3;
  const auto data = make_problem(2, 600, 5, 4);  // 200 rows per worker, 10 full batches of 20
  actors::runtime rt{actors::runtime_options::local(2)};
  for (auto kind : {opt::update_kind::sgd, opt::update_kind::momentum}) {
    CAPTURE(opt::to_string(kind));
    auto job = small_job(5, 4, kind, workers);
    job.last_step = 25;
    auto outcome = actors::run_local_job(rt, job, 2, data, actors::chief_options{});
    REQUIRE_MESSAGE(outcome.ok(), outcome.error().message());
    CHECK(outcome->stats.dropped == 0);
    CHECK(outcome->stats.applied == 25 * workers);

    const Eigen::VectorXd theta = large_batch_sgd(job, data, workers);
    CHECK((outcome->theta - theta).norm() <= 1e-12 * (1 + theta.norm()));
    CHECK(theta.norm() > 0.1);  // it did move
  }
}

TEST_CASE("a backup worker keeps synchronous steps going past a straggler, its gradients dropped") {
  const auto data = make_problem(3, 600, 5, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  auto job = small_job(5, 3, opt::update_kind::sgd, 3);
  job.replicas_to_aggregate = 2;
  // Long enough (a few hundred ms) that the straggler, late by at least 1 ms a gradient, pushes
  // some even when a busy machine wakes it late (at 400 steps the job once ended in 80 ms first).
  job.last_step = 2000;
  auto outcome = actors::run_local_job(rt, job, 1, data, actors::chief_options{}, 2, 50.0);
  REQUIRE_MESSAGE(outcome.ok(), outcome.error().message());
  CHECK(outcome->step == 2000);
  CHECK(outcome->stats.applied == 4000);
  CHECK(outcome->stats.dropped > 0);
}

TEST_CASE("asynchronous with bounded staleness: every gradient applied, staleness within the bound") {
  const auto data = make_problem(4, 800, 5, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  for (int s : {0, 2}) {
    CAPTURE(s);
    auto job = small_job(5, 3, opt::update_kind::sgd, 4);
    job.sync = false;
    job.staleness = s;
    job.last_step = 200;
    auto outcome = actors::run_local_job(rt, job, 2, data, actors::chief_options{});
    REQUIRE_MESSAGE(outcome.ok(), outcome.error().message());
    CHECK(outcome->step == 200);
    CHECK(outcome->stats.dropped == 0);
    // While a worker at clock c computes, every other worker's clock stays within [c - s, c + s],
    // so each of the 3 others pushes at most 2s + 1 times before this gradient lands.
    CHECK(outcome->stats.staleness_max <= 3 * (2 * s + 1));
  }
}

TEST_CASE("checkpoints: the final one holds the final theta, and a new run resumes from it") {
  shardopt::test::temp_dir dir;
  const auto data = make_problem(5, 400, 4, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  auto job = small_job(4, 3, opt::update_kind::adam, 2);
  auto chief = checkpointing_chief(dir.path().string(), 10);
  auto first = actors::run_local_job(rt, job, 2, data, chief);
  REQUIRE_MESSAGE(first.ok(), first.error().message());
  CHECK(first->restored_step == -1);
  auto newest = io::newest_readable_ps_checkpoint(chief.checkpoint_dir);
  REQUIRE(newest);
  REQUIRE(newest->state);
  auto saved = io::load_ps_checkpoint(newest->path);
  REQUIRE(saved.ok());
  CHECK(saved->step == 40);
  CHECK(saved->updates == 40);
  CHECK(saved->rule == "adam");
  CHECK(same_bits(saved->model.theta, first->theta));

  job.last_step = 70;
  std::vector<std::string> notes;
  chief.note = [&](const std::string& text) { notes.push_back(text); };
  auto second = actors::run_local_job(rt, job, 3, data, chief);  // another PS count is fine
  REQUIRE_MESSAGE(second.ok(), second.error().message());
  CHECK(second->restored_step == 40);
  CHECK(second->step == 70);
  REQUIRE(!notes.empty());
  CHECK(notes.front().find("restored step 40") != std::string::npos);

  // State of another rule is refused, naming the file.
  job.rule.kind = opt::update_kind::momentum;
  auto third = actors::run_local_job(rt, job, 1, data, chief);
  REQUIRE(!third.ok());
  CHECK(third.error().message().find("ckpt-000000000070.txt") != std::string::npos);
  CHECK(third.error().message().find("adam") != std::string::npos);
}

TEST_CASE("an absurd learning rate stops training with the NaN message and a valid checkpoint") {
  shardopt::test::temp_dir dir;
  const auto data = make_problem(6, 400, 4, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  auto job = small_job(4, 3, opt::update_kind::sgd, 2);
  job.rule.rate.initial = 1e12;
  job.last_step = 10000;
  auto chief = checkpointing_chief(dir.path().string(), 1);
  auto outcome = actors::run_local_job(rt, job, 1, data, chief);
  REQUIRE(!outcome.ok());
  const auto message = outcome.error().message();
  CAPTURE(message);
  CHECK((message.find("loss is") != std::string::npos || message.find("not finite") != std::string::npos));
  CHECK(message.find("learning rate") != std::string::npos);
  auto newest = io::newest_readable_ps_checkpoint(chief.checkpoint_dir);
  REQUIRE(newest);
  REQUIRE(newest->state);
  auto saved = io::load_ps_checkpoint(newest->path);
  REQUIRE(saved.ok());
  CHECK(saved->model.theta.allFinite());
  CHECK(saved->step < 10000);
}

TEST_CASE("a parameter server answers malformed requests with errors and keeps serving") {
  actors::runtime rt{actors::runtime_options::local(2)};
  const auto token = actors::access_token::random();
  auto server = actors::spawn_parameter_server(rt.system(), token);
  caf::scoped_actor self{rt.system()};
  auto on_error = [&](std::string& text) {
    return [&](caf::error& err) { text = actors::describe(err, rt.system()); };
  };
  {
    // The chief says hello first: only worker 0 initialises.
    std::string text;
    self->request(server, 10s, actors::pshello_atom::value, std::uint64_t{0},
                  actors::ps_hello{actors::protocol_version, actors::wire_probe(), token, 0, "softmax, 4 features x 3 outputs, lambda 0.001"})
      .receive([&](std::uint64_t) { text = "no error"; }, on_error(text));
    REQUIRE(text == "no error");
  }
  auto init = [&](const actors::ps_config& c, const actors::ps_snapshot& start) {
    std::string text;
    self->request(server, 10s, actors::psinit_atom::value, std::uint64_t{1}, token, c, start)
      .receive([&](std::uint64_t) { text = "no error"; }, on_error(text));
    return text;
  };
  auto push = [&](std::uint32_t worker, std::int64_t stamp, const actors::dense_vector& g) {
    std::string text;
    self->request(server, 10s, actors::push_atom::value, std::uint64_t{2}, token, worker, stamp,
                  1.0, std::int64_t{1}, g)
      .receive([&](std::uint64_t, std::int64_t, bool) { text = "no error"; }, on_error(text));
    return text;
  };
  actors::ps_config config;
  config.begin = 0;
  config.end = 4;
  config.total_replicas = 2;
  config.replicas_to_aggregate = 3;  // more than the workers
  actors::ps_snapshot start;
  start.theta = actors::dense_vector{Eigen::VectorXd::Zero(4)};
  CHECK(init(config, start).find("replicas_to_aggregate") != std::string::npos);
  config.replicas_to_aggregate = 2;
  config.end = 5;  // the state does not fit
  CHECK(init(config, start).find("does not fit") != std::string::npos);
  config.end = 4;
  CHECK(init(config, start) == "no error");
  CHECK(init(config, start).find("already initialised") != std::string::npos);
  CHECK(push(0, 0, actors::dense_vector{Eigen::VectorXd::Ones(3)}).find("3 entries") != std::string::npos);
  const actors::dense_vector grad{Eigen::VectorXd::Ones(4)};
  CHECK(push(9, 0, grad).find("not worker 9 of this job") != std::string::npos);
  CHECK(push(0, 0, actors::dense_vector{Eigen::VectorXd::Constant(4, std::nan(""))}).find("non-finite")
        != std::string::npos);
  CHECK(push(0, 7, grad).find("step 7") != std::string::npos);
  // Still serving, unchanged.
  self->request(server, 10s, actors::pull_atom::value, std::uint64_t{6}, token)
    .receive([&](std::uint64_t round, actors::ps_view& view) {
               CHECK(round == 6);
               CHECK(view.step == 0);
               CHECK(view.status == static_cast<std::uint8_t>(actors::ps_status::running));
               CHECK(view.theta.map().isZero());
             },
             [&](caf::error& err) { FAIL(actors::describe(err, rt.system())); });
  self->send_exit(server, caf::exit_reason::user_shutdown);
}

namespace {

/// small_job with a network of `hidden` relu layers and a softmax output.
actors::ps_job network_job(std::int64_t d, std::int64_t classes, opt::update_kind kind, std::uint32_t workers,
                           std::vector<std::int64_t> hidden) {
  auto job = small_job(d, classes, kind, workers);
  job.shape = model::model_shape{model::model_kind::softmax, d, classes, std::move(hidden), model::activation::relu};
  return job;
}

} // namespace

TEST_CASE("an MLP: one worker and one PS, synchronous, equal a plain SGD loop from the seeded start, bit for bit") {
  const auto data = make_problem(7, 300, 6, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  for (auto kind : {opt::update_kind::sgd, opt::update_kind::adam}) {
    CAPTURE(opt::to_string(kind));
    auto job = network_job(6, 3, kind, 1, {8, 5});
    auto outcome = actors::run_local_job(rt, job, 1, data, actors::chief_options{});
    REQUIRE_MESSAGE(outcome.ok(), outcome.error().message());
    CHECK(outcome->step == 40);

    REQUIRE(model::initial_theta(job.shape, job.seed).norm() > 0);  // not the zero saddle
    const Eigen::VectorXd theta = plain_sgd(job, data);
    CHECK(same_bits(outcome->theta, theta));
    CHECK((theta - model::initial_theta(job.shape, job.seed)).norm() > 0.01);  // it did move
  }
}

TEST_CASE("an MLP over 2 PSs: 3 synchronous workers equal large-batch SGD over the union of their batches") {
  const std::uint32_t workers = 3;
  const auto data = make_problem(8, 600, 5, 4);
  actors::runtime rt{actors::runtime_options::local(2)};
  auto job = network_job(5, 4, opt::update_kind::momentum, workers, {7});
  job.last_step = 25;
  auto outcome = actors::run_local_job(rt, job, 2, data, actors::chief_options{});
  REQUIRE_MESSAGE(outcome.ok(), outcome.error().message());
  CHECK(outcome->stats.applied == 25 * workers);

  const Eigen::VectorXd theta = large_batch_sgd(job, data, workers);
  CHECK((outcome->theta - theta).norm() <= 1e-12 * (1 + theta.norm()));
}

TEST_CASE("an MLP's checkpoint restores the network, and a checkpoint of another architecture is refused by name") {
  shardopt::test::temp_dir dir;
  const auto data = make_problem(9, 400, 4, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  auto job = network_job(4, 3, opt::update_kind::adam, 2, {6});
  auto chief = checkpointing_chief(dir.path().string(), 10);
  auto first = actors::run_local_job(rt, job, 2, data, chief);
  REQUIRE_MESSAGE(first.ok(), first.error().message());
  auto newest = io::newest_readable_ps_checkpoint(chief.checkpoint_dir);
  REQUIRE(newest);
  REQUIRE(newest->state);
  auto saved = io::load_ps_checkpoint(newest->path);
  REQUIRE_MESSAGE(saved.ok(), saved.error().message());
  CHECK(saved->model.shape == job.shape);
  CHECK(same_bits(saved->model.theta, first->theta));

  job.last_step = 60;
  auto second = actors::run_local_job(rt, job, 1, data, chief);
  REQUIRE_MESSAGE(second.ok(), second.error().message());
  CHECK(second->restored_step == 40);

  auto wider = network_job(4, 3, opt::update_kind::adam, 2, {9});
  wider.last_step = 80;
  auto refused = actors::run_local_job(rt, wider, 1, data, chief);
  REQUIRE(!refused.ok());
  CHECK(refused.error().message().find("ckpt-000000000060.txt: the checkpoint is of a model of shape mlp 4-6-3 "
                                       "(relu, softmax output); this job trains mlp 4-9-3 (relu, softmax output)")
        != std::string::npos);
}

TEST_CASE("an MLP whose learning rate explodes stops with the NaN message") {
  const auto data = make_problem(10, 400, 4, 3);
  actors::runtime rt{actors::runtime_options::local(2)};
  auto job = network_job(4, 3, opt::update_kind::sgd, 2, {6});
  job.rule.rate.initial = 1e12;
  job.last_step = 10000;
  auto outcome = actors::run_local_job(rt, job, 2, data, actors::chief_options{});
  REQUIRE(!outcome.ok());
  CHECK(outcome.error().message().find("learning rate") != std::string::npos);
}

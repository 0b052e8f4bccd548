#include "actors/ps/ps_client.hpp"

#include "actors/wire/network.hpp"

#include <algorithm>
#include <cstdio>

namespace shardopt::actors {

ps_client::ps_client(caf::blocking_actor* self, const ps_group& group, const ps_job& job,
                     std::uint32_t worker)
  : servers_(self, group.servers, group.names), job_(job), worker_(worker),
    bounds_(slice_bounds(job.shape.dimension(), static_cast<std::uint32_t>(group.servers.size()))) {}

template <class Atom, class... Ts>
result<void> ps_client::tell_all(const std::string& what, Atom atom, const Ts&... xs) {
  // A PS may end right after a final request (failure, goodbye, stop): that counts as an answer.
  constexpr bool farewell = std::is_same_v<Atom, psstop_atom> || std::is_same_v<Atom, bye_atom>
                            || std::is_same_v<Atom, psfail_atom>;
  return servers_.round(
    reply<>{}, timeouts::control, what,
    [&](std::size_t j, std::uint64_t round) { self()->send(servers_[j], atom, round, job_.token, xs...); },
    [](std::size_t) -> result<void> { return {}; },
    [](std::size_t) -> result<down_action> {
      return farewell ? down_action::answered : down_action::fail;
    });
}

result<void> ps_client::hello() {
  char lambda[64];
  std::snprintf(lambda, sizeof lambda, "%.17g", job_.lambda);
  const ps_hello hello{protocol_version, wire_probe(), job_.token, worker_,
                       model::describe(job_.shape) + ", lambda " + lambda};
  return servers_.round(
    reply<>{}, timeouts::control, "hello",
    [&](std::size_t j, std::uint64_t round) { self()->send(servers_[j], pshello_atom::value, round, hello); },
    [](std::size_t) -> result<void> { return {}; });
}

result<pulled> ps_client::pull(Eigen::VectorXd& theta) {
  pulled out;
  out.stamps.assign(size(), 0);
  theta.resize(job_.shape.dimension());
  std::vector<ps_status> statuses(size(), ps_status::waiting);
  auto done = servers_.round(
    reply<ps_view>{}, job_.step_timeout, "pull",
    [&](std::size_t j, std::uint64_t round) { self()->send(servers_[j], pull_atom::value, round, job_.token); },
    [&](std::size_t j, ps_view view) -> result<void> {
      if (view.status > static_cast<std::uint8_t>(ps_status::failed))
        return fail_runtime("answered with an unknown status");
      const auto status = static_cast<ps_status>(view.status);
      out.stamps[j] = view.step;
      if (j == 0)
        out.step = view.step;
      // Failed if any PS failed; finished only when every PS is (in synchronous mode with backup
      // workers a PS may finish its last step a little after another).
      statuses[j] = status;
      if (status == ps_status::failed)
        out.note = view.note;
      if (status == ps_status::running || status == ps_status::finished) {
        const auto n = bounds_[j + 1] - bounds_[j];
        if (static_cast<std::int64_t>(view.theta.size()) != n)
          return fail_runtime("holds " + std::to_string(view.theta.size()) + " parameters, this worker expects "
                      + std::to_string(n) + " (do all tasks use the same model, data and --ps count?)");
        theta.segment(bounds_[j], n) = view.theta.map();
      }
      return {};
    });
  if (!done)
    return done.error();
  auto any = [&](ps_status x) { return std::find(statuses.begin(), statuses.end(), x) != statuses.end(); };
  out.status = any(ps_status::failed)    ? ps_status::failed
               : any(ps_status::waiting) ? ps_status::waiting
               : any(ps_status::running) ? ps_status::running
                                         : ps_status::finished;
  return out;
}

result<void> ps_client::initialise(const Eigen::VectorXd& theta,
                                   const std::vector<Eigen::VectorXd>& slots, std::int64_t step,
                                   std::int64_t updates) {
  return servers_.round(
    reply<>{}, timeouts::control, "initialisation",
    [&](std::size_t j, std::uint64_t round) {
      const auto begin = bounds_[j];
      const auto n = bounds_[j + 1] - begin;
      ps_config c;
      c.index = static_cast<std::uint32_t>(j);
      c.count = static_cast<std::uint32_t>(size());
      c.begin = begin;
      c.end = begin + n;
      set_rule(c, job_.rule);
      c.sync = job_.sync;
      c.replicas_to_aggregate = job_.sync ? job_.replicas_to_aggregate : 1;
      c.total_replicas = job_.workers;
      c.staleness = job_.sync ? -1 : job_.staleness;
      c.last_step = job_.last_step;
      ps_snapshot start;
      start.step = step;
      start.updates = updates;
      start.theta = dense_vector{std::make_shared<const Eigen::VectorXd>(theta.segment(begin, n))};
      Eigen::VectorXd packed(n * static_cast<Eigen::Index>(slots.size()));
      for (std::size_t k = 0; k < slots.size(); ++k)
        packed.segment(static_cast<Eigen::Index>(k) * n, n) = slots[k].segment(begin, n);
      start.slots = dense_vector{std::make_shared<const Eigen::VectorXd>(std::move(packed))};
      self()->send(servers_[j], psinit_atom::value, round, job_.token, c, start);
    },
    [](std::size_t) -> result<void> { return {}; });
}

result<void> ps_client::push(const std::vector<std::int64_t>& stamps, double loss,
                             std::int64_t examples, const Eigen::VectorXd& grad) {
  return servers_.round(
    reply<std::int64_t, bool>{}, job_.step_timeout, "push",
    [&](std::size_t j, std::uint64_t round) {
      const auto begin = bounds_[j];
      const auto n = bounds_[j + 1] - begin;
      self()->send(servers_[j], push_atom::value, round, job_.token, worker_, stamps[j], loss, examples,
                   dense_vector{std::make_shared<const Eigen::VectorXd>(grad.segment(begin, n))});
    },
    [](std::size_t, std::int64_t, bool) -> result<void> { return {}; });
}

result<void> ps_client::clock(std::int64_t clock) {
  return servers_.round(
    reply<std::int64_t>{}, 0, 1, job_.step_timeout, "clock",
    [&](std::size_t j, std::uint64_t round) {
      self()->send(servers_[j], clock_atom::value, round, job_.token, worker_, clock);
    },
    [](std::size_t, std::int64_t) -> result<void> { return {}; });
}

result<void> ps_client::state(Eigen::VectorXd& theta, std::vector<Eigen::VectorXd>& slots,
                              std::int64_t& step, std::int64_t& updates) {
  const auto dimension = job_.shape.dimension();
  theta.resize(dimension);
  slots.assign(job_.rule.slot_count(), Eigen::VectorXd(dimension));
  return servers_.round(
    reply<ps_snapshot>{}, timeouts::control, "state",
    [&](std::size_t j, std::uint64_t round) { self()->send(servers_[j], psstate_atom::value, round, job_.token); },
    [&](std::size_t j, ps_snapshot snapshot) -> result<void> {
      const auto begin = bounds_[j];
      const auto n = bounds_[j + 1] - begin;
      if (static_cast<std::int64_t>(snapshot.theta.size()) != n
          || static_cast<std::int64_t>(snapshot.slots.size()) != n * static_cast<std::int64_t>(slots.size()))
        return fail_runtime("returned a state of the wrong size");
      theta.segment(begin, n) = snapshot.theta.map();
      for (std::size_t k = 0; k < slots.size(); ++k)
        slots[k].segment(begin, n) = snapshot.slots.map().segment(static_cast<Eigen::Index>(k) * n, n);
      if (j == 0) {
        step = snapshot.step;
        updates = snapshot.updates;
      }
      return {};
    });
}

result<ps_stats> ps_client::stats() {
  ps_stats out;
  auto done = servers_.round(
    reply<ps_stats>{}, 0, 1, timeouts::control, "stats",
    [&](std::size_t j, std::uint64_t round) { self()->send(servers_[j], psstats_atom::value, round, job_.token); },
    [&](std::size_t, ps_stats s) -> result<void> {
      out = s;
      return {};
    });
  if (!done)
    return done.error();
  return out;
}

void ps_client::report_failure(const std::string& why) {
  (void)tell_all("failure report", psfail_atom::value, why);  // best effort: we fail anyway
}

result<void> ps_client::bye() {
  return tell_all("goodbye", bye_atom::value, worker_);
}

result<void> ps_client::stop() {
  return tell_all("stop", psstop_atom::value);
}

} // namespace shardopt::actors

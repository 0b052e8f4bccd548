// Parameter servers over the network: publishing one (a `ps-task --job_name ps`), waiting for it
// to end, and connecting a worker to the published ones.

#include "actors/ps/ps_worker.hpp"

#include <optional>

namespace shardopt::actors {

result<ps_group> connect_parameter_servers(runtime& rt, const std::vector<endpoint>& endpoints,
                                           std::chrono::milliseconds wait) {
  ps_group group;
  for (std::size_t j = 0; j < endpoints.size(); ++j) {
    const auto name = "ps " + std::to_string(j) + " (" + endpoints[j].text() + ")";
    auto server = connect_to<ps_actor>(rt, endpoints[j], "a shardopt parameter server", wait);
    if (!server)
      return server.error().with_context(name);
    group.servers.push_back(*server);
    group.names.push_back(name);
  }
  return group;
}

result<std::pair<ps_actor, std::uint16_t>> publish_parameter_server(runtime& rt, const std::string& bind,
                                                                    std::uint16_t port,
                                                                    const access_token& token) {
  auto server = spawn_parameter_server(rt.system(), token);
  auto bound = publish(rt, server, bind, port);
  if (!bound) {
    caf::scoped_actor self{rt.system()};
    self->send_exit(server, caf::exit_reason::user_shutdown);
    return bound.error();
  }
  return std::make_pair(server, *bound);
}

result<void> await_parameter_server(runtime& rt, const ps_actor& server, std::chrono::milliseconds startup) {
  caf::scoped_actor self{rt.system()};
  self->monitor(server);
  std::optional<result<void>> out;
  bool initialised = false;
  while (!out) {
    self->receive(
      [&](caf::down_msg& down) {
        if (down.reason && down.reason != caf::exit_reason::normal)
          out = result<void>{fail_runtime(describe(down.reason, rt.system()))};
        else
          out = result<void>{};
      },
      caf::others >> [](caf::message_view&) -> caf::result<caf::message> { return caf::message{}; },
      caf::after(initialised ? std::chrono::milliseconds{std::chrono::hours{24}} : startup) >> [&] {
        // Still waiting for the chief? Then give up rather than serve forever.
        self->request(server, timeouts::control, pull_atom::value, std::uint64_t{0}, access_token{})
          .receive([&](std::uint64_t, ps_view& view) {
                     initialised = view.status != static_cast<std::uint8_t>(ps_status::waiting);
                   },
                   [&](caf::error& err) {
                     // Refused: it is initialised (a token is set); anything else: keep waiting.
                     initialised = err.category() == error_category
                                   && err.code() == static_cast<std::uint8_t>(errc::refused);
                   });
        if (!initialised)
          out = result<void>{fail_runtime("no chief initialised this parameter server within " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(startup).count()) + " s")};
      });
  }
  return *out;
}

result<ps_outcome> run_remote_worker(runtime& rt, const ps_group& ps, const ps_job& job,
                                     const worker_task& task, const chief_options* chief) {
  caf::scoped_actor self{rt.system()};
  return run_worker(self.ptr(), ps, job, task, chief);
}

void unpublish_parameter_server(runtime& rt, const ps_actor& server, std::uint16_t port) {
  unpublish_actor(rt, caf::actor_cast<caf::strong_actor_ptr>(server), port);
}

result<ps_stats> parameter_server_stats(runtime& rt, const ps_actor& server, const access_token& token,
                                        std::chrono::milliseconds timeout) {
  return ask_once<ps_stats>(rt, server, timeout, psstats_atom::value, std::uint64_t{0}, token);
}

} // namespace shardopt::actors

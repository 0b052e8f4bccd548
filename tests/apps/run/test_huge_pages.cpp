// The restart on huge pages: the tunables it sets, and a `shardopt node` process that runs with
// them (the same process id), leaves the user's own tunables alone, and is left alone when told.

#include "apps/run/huge_pages.hpp"

#include "support/process.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

using namespace shardopt::test;
namespace apps = shardopt::apps;

namespace {

std::optional<std::string> with_huge_pages(const char* current) {
  char text[256];
  const char* wanted = apps::tunables_with_huge_pages(current, text, sizeof text);
  if (!wanted)
    return std::nullopt;
  return std::string{wanted};
}

/// A process's environment variable, read from /proc (nullopt when unset).
std::optional<std::string> environment_of(pid_t pid, const std::string& name) {
  std::ifstream in{"/proc/" + std::to_string(pid) + "/environ", std::ios::binary};
  const std::string all{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  std::size_t at = 0;
  while (at < all.size()) {
    const auto end = all.find('\0', at);
    const auto entry = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (entry.rfind(name + "=", 0) == 0)
      return entry.substr(name.size() + 1);
    if (end == std::string::npos)
      break;
    at = end + 1;
  }
  return std::nullopt;
}

/// Sets (or, with null, unsets) an environment variable for as long as it lives.
class scoped_env {
public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

/// GLIBC_TUNABLES of a `shardopt node` started now, once it listens.
std::optional<std::string> tunables_of_a_node() {
  background_process node{{shardopt_binary(), "node", "--port", "0"}};
  REQUIRE(node.wait_for_output("listening on", std::chrono::seconds{20}));
  return environment_of(node.pid(), "GLIBC_TUNABLES");
}

} // namespace

TEST_CASE("the tunables for huge pages: set where none are, never beside or over the user's own") {
  CHECK(with_huge_pages(nullptr) == "glibc.malloc.hugetlb=1");
  CHECK_FALSE(with_huge_pages(""));  // set, if empty: glibc empties it for a privileged process
  CHECK_FALSE(with_huge_pages("glibc.malloc.arena_max=2"));  // the user's tunables
  CHECK_FALSE(with_huge_pages("glibc.malloc.hugetlb=0"));    // the user's choice
  CHECK_FALSE(with_huge_pages("glibc.malloc.hugetlb=1"));    // and no second restart
  char small[8];
  CHECK(apps::tunables_with_huge_pages(nullptr, small, sizeof small) == nullptr);  // does not fit: nothing
}

TEST_CASE("shardopt starts itself again on huge pages where the kernel grants them on request, unless told not to") {
  const scoped_env unasked{"SHARDOPT_HUGE_PAGES", nullptr};
  if (!apps::huge_pages_on_request()) {
    MESSAGE("transparent huge pages are not granted on request here (always or never): no restart");
    const scoped_env none{"GLIBC_TUNABLES", nullptr};
    CHECK_FALSE(tunables_of_a_node());
    return;
  }
  {
    const scoped_env none{"GLIBC_TUNABLES", nullptr};
    background_process node{{shardopt_binary(), "node", "--port", "0"}};
    REQUIRE(node.wait_for_output("listening on", std::chrono::seconds{20}));
    CHECK(environment_of(node.pid(), "GLIBC_TUNABLES") == "glibc.malloc.hugetlb=1");
    // The same process, by its own name (not "exe").
    std::ifstream comm{"/proc/" + std::to_string(node.pid()) + "/comm"};
    std::string name;
    std::getline(comm, name);
    CHECK(name == "shardopt");
  }
  {
    const scoped_env own{"GLIBC_TUNABLES", "glibc.malloc.arena_max=4"};
    CHECK(tunables_of_a_node() == "glibc.malloc.arena_max=4");
  }
  {
    const scoped_env off{"SHARDOPT_HUGE_PAGES", "0"};
    const scoped_env none{"GLIBC_TUNABLES", nullptr};
    CHECK_FALSE(tunables_of_a_node());
  }
  {
    const scoped_env chosen{"GLIBC_TUNABLES", "glibc.malloc.hugetlb=0"};
    CHECK(tunables_of_a_node() == "glibc.malloc.hugetlb=0");
  }
}

#include "apps/run/huge_pages.hpp"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <unistd.h>

namespace shardopt::apps {

namespace {

constexpr const char* tunable = "glibc.malloc.hugetlb";

} // namespace

bool huge_pages_available() {
  std::ifstream in{"/sys/kernel/mm/transparent_hugepage/enabled"};
  std::string modes;
  std::getline(in, modes);
  return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
}

const char* tunables_with_huge_pages(const char* current, char* out, std::size_t size) {
  if (current && *current != '\0')
    return nullptr;
  const int written = std::snprintf(out, size, "%s=1", tunable);
  return written > 0 && static_cast<std::size_t>(written) < size ? out : nullptr;
}

void restart_on_huge_pages(char** argv) {
  const char* choice = std::getenv("SHARDOPT_HUGE_PAGES");
  if ((choice && std::strcmp(choice, "0") == 0) || !huge_pages_available())
    return;
  char text[64];
  const char* wanted = tunables_with_huge_pages(std::getenv("GLIBC_TUNABLES"), text, sizeof text);
  if (!wanted || ::setenv("GLIBC_TUNABLES", wanted, 1) != 0)
    return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("GLIBC_TUNABLES");  // not restarted (no /proc, say): go on as started
}

} // namespace shardopt::apps

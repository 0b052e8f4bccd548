#include "apps/run/huge_pages.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <gnu/libc-version.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace shardopt::apps {

namespace {

constexpr const char* tunable = "glibc.malloc.hugetlb";
/// Set for the restarted process only, which removes it (children do not inherit it).
constexpr const char* restarted = "SHARDOPT_RESTARTED_ON_HUGE_PAGES";

bool glibc_knows_the_tunable() {
  int major = 0;
  int minor = 0;
  return std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) == 2
         && (major > 2 || (major == 2 && minor >= 35));
}

/// Whether /proc/self/exe is the program itself, not ld.so running it (`ld.so ./shardopt`: an
/// exec of /proc/self/exe with these arguments would run the loader on the command's name).
bool exe_is_the_program() {
  const auto* name = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  struct stat program {};
  struct stat exe {};
  return name && ::stat(name, &program) == 0 && ::stat("/proc/self/exe", &exe) == 0
         && program.st_dev == exe.st_dev && program.st_ino == exe.st_ino;
}

/// The process's name from argv[0] (an exec of /proc/self/exe names it "exe" in ps and top).
void take_name(const char* argv0) {
  if (!argv0)
    return;
  const char* slash = std::strrchr(argv0, '/');
  ::prctl(PR_SET_NAME, slash ? slash + 1 : argv0, 0, 0, 0);
}

} // namespace

bool huge_pages_on_request() {
  std::ifstream in{"/sys/kernel/mm/transparent_hugepage/enabled"};
  std::string modes;
  std::getline(in, modes);
  return modes.find("[madvise]") != std::string::npos && glibc_knows_the_tunable();
}

const char* tunables_with_huge_pages(const char* current, char* out, std::size_t size) {
  if (current)
    return nullptr;
  const int written = std::snprintf(out, size, "%s=1", tunable);
  return written > 0 && static_cast<std::size_t>(written) < size ? out : nullptr;
}

void restart_on_huge_pages(char** argv) {
  if (std::getenv(restarted)) {
    ::unsetenv(restarted);
    take_name(argv[0]);
    return;
  }
  const char* choice = std::getenv("SHARDOPT_HUGE_PAGES");
  if ((choice && std::strcmp(choice, "0") == 0) || ::getauxval(AT_SECURE) != 0 || !huge_pages_on_request()
      || !exe_is_the_program())
    return;
  char text[64];
  const char* wanted = tunables_with_huge_pages(std::getenv("GLIBC_TUNABLES"), text, sizeof text);
  if (!wanted || ::setenv("GLIBC_TUNABLES", wanted, 1) != 0)
    return;
  if (::setenv(restarted, "1", 1) == 0)
    ::execv("/proc/self/exe", argv);
  // Not restarted (no /proc, say): go on as started.
  ::unsetenv(restarted);
  ::unsetenv("GLIBC_TUNABLES");
}

} // namespace shardopt::apps

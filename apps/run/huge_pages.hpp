#pragma once

// Large arrays on transparent huge pages. A pass reads its rows in order but its weights, records
// and sums at random, one feature per non-zero; at 2^22 to 2^24 features those arrays span
// hundreds of MB, and with 4 KiB pages nearly every access misses the TLB and every new page is a
// fault (in a virtual machine, an expensive one). glibc's malloc puts its large blocks on 2 MiB
// pages when the tunable glibc.malloc.hugetlb=1 is set, but it reads tunables only when a process
// starts. So the `shardopt` executable starts itself again, once, with it.

#include <cstddef>

namespace shardopt::apps {

/// Whether the kernel gives huge pages to a process that asks (transparent_hugepage `always` or
/// `madvise`).
bool huge_pages_available();

/// The value GLIBC_TUNABLES should have for a start on huge pages, given its current value
/// (`current`, null when unset): glibc.malloc.hugetlb=1 when it is unset or empty; null when it
/// holds anything (the user's tunables are left as they are: Debian's glibc 2.36 applies only the
/// first of several, so one cannot be added beside them). `out` holds the text returned.
const char* tunables_with_huge_pages(const char* current, char* out, std::size_t size);

/// Starts this executable again (execv of /proc/self/exe with `argv`, the same process id) with
/// GLIBC_TUNABLES=glibc.malloc.hugetlb=1, unless SHARDOPT_HUGE_PAGES=0, the kernel gives no huge
/// pages, or GLIBC_TUNABLES is set already (so it happens once). Returns only when it did not
/// restart, the environment as it was.
void restart_on_huge_pages(char** argv);

} // namespace shardopt::apps

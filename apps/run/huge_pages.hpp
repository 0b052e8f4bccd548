#pragma once

// Large arrays on transparent huge pages. A pass reads its rows in order but its weights, records
// and sums at random, one feature per non-zero; at 2^22 to 2^24 features those arrays span
// hundreds of MB, and with 4 KiB pages nearly every access misses the TLB and every new page is a
// fault (in a virtual machine, an expensive one). glibc's malloc (2.35 and later) puts its large
// blocks on 2 MiB pages when the tunable glibc.malloc.hugetlb=1 is set and the kernel grants huge
// pages on request (`madvise`), but it reads tunables only when a process starts. So the
// `shardopt` executable starts itself again, once, with it.

#include <cstddef>

namespace shardopt::apps {

/// Whether a restart would put malloc's blocks on huge pages: transparent huge pages granted on
/// request (`madvise`; under `always` the kernel gives them unasked, under `never` not at all) and
/// a glibc that knows the tunable (2.35 and later).
bool huge_pages_on_request();

/// The value GLIBC_TUNABLES should have for a start on huge pages, given its current value
/// (`current`, null when unset): glibc.malloc.hugetlb=1 when it is unset; null when it is set,
/// even empty (the user's tunables are left as they are, and glibc empties or drops the variable
/// for a privileged process). `out` holds the text returned.
const char* tunables_with_huge_pages(const char* current, char* out, std::size_t size);

/// Starts this executable again (execv of /proc/self/exe with `argv`: the same process id and
/// arguments) with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, unless SHARDOPT_HUGE_PAGES=0, a restart
/// would not help (huge_pages_on_request), GLIBC_TUNABLES is set, the process runs with raised
/// privileges (setuid, capabilities: glibc ignores tunables there), or /proc/self/exe is not the
/// program (started through ld.so). The restarted process gets its name back (not "exe") and
/// returns at once. Returns only when it did not restart, the environment as it was.
void restart_on_huge_pages(char** argv);

} // namespace shardopt::apps

#pragma once

// An allocator for large buffers that a pass reads and writes at random (a shard's records, a
// driver's sums): they are aligned to 2 MiB and, on Linux, the kernel is asked to back them with
// transparent huge pages, so that a pass over millions of features misses the TLB once per 2 MiB
// instead of once per 4 KiB. Small buffers, and systems without the hint, get ordinary memory.

#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace shardopt {

/// A std::allocator for vectors of many random-access entries (see above).
template <class T>
struct large_buffer_allocator {
  using value_type = T;

  /// Buffers from this size up are aligned and hinted: 2 MiB, one huge page.
  static constexpr std::size_t huge_page = std::size_t{2} << 20;

  large_buffer_allocator() = default;
  template <class U>
  large_buffer_allocator(const large_buffer_allocator<U>&) noexcept {}  // NOLINT: as std::allocator

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_page)
      return static_cast<T*>(::operator new(bytes));
    const std::size_t rounded = (bytes + huge_page - 1) / huge_page * huge_page;
    void* memory = std::aligned_alloc(huge_page, rounded);
    if (!memory)
      throw std::bad_alloc{};
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(memory, rounded, MADV_HUGEPAGE);  // a hint: without huge pages it changes nothing
#endif
    return static_cast<T*>(memory);
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < huge_page)
      ::operator delete(p);
    else
      std::free(p);
  }

  friend bool operator==(const large_buffer_allocator&, const large_buffer_allocator&) { return true; }
  friend bool operator!=(const large_buffer_allocator&, const large_buffer_allocator&) { return false; }
};

} // namespace shardopt

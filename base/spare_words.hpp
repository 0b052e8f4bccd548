#pragma once

// Word buffers kept between passes. A shard of sparse rows answers every pass with a word per
// feature its rows touch (8 bytes each: 134 MB a shard at 2^24 features), and the driver drops
// that answer once it has summed it. Memory that large comes fresh from the kernel each time,
// mapped, faulted in and zeroed page by page: at 2^24 a quarter of a pass's cycles. So the driver
// (or a node summing its children) gives an answer's words back once summed, and the next pass's
// answer takes them. Process-wide and thread-safe; it keeps a few large buffers only, for as long
// as a run lasts (release_spare_words).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardopt {

/// A buffer of `size` words for a caller that writes every one of them: a kept buffer of about
/// that capacity, holding old words, or else a new one of zeros.
std::vector<std::int64_t> spare_words(std::size_t size);

/// The same, all zeros: a kept buffer zeroed, or a new one (zeroed once, as it is made).
std::vector<std::int64_t> spare_zeros(std::size_t size);

/// Keeps `words`' memory for a later `spare_words` (a small buffer is freed; so is the one kept
/// longest once `kept_buffers` are kept). `words` is left empty either way.
void give_back_words(std::vector<std::int64_t>&& words) noexcept;

/// Frees every kept buffer: called when a run's objective ends, so that a process that goes on
/// (a node serving the next driver, Python after `fit`) does not hold a finished run's memory.
void release_spare_words();

/// Whether given-back buffers are kept (on unless turned off, or until the last holder below lets
/// go; for tests).
void keep_spare_words(bool on);

/// Holds the store while a driver's run or a node with drivers needs it: keeping is on while any
/// holder is left; when the last one lets go, it turns off and the kept buffers are freed. (A
/// process may run several: a node and a driver, or two nodes, as tests do.)
void hold_spare_words();
void let_go_spare_words();

/// Buffers kept at most, and the smallest kept (in words).
inline constexpr std::size_t kept_buffers = 8;
inline constexpr std::size_t smallest_kept_words = std::size_t{1} << 13;

/// How many buffers are kept now (for tests).
std::size_t kept_word_buffers();

} // namespace shardopt

#pragma once

// What the process-wide stores of buffers kept between passes share (base/spare_words.cpp's word
// buffers, actors/wire/messages.cpp's received vectors): the kept items under one mutex, room for
// `capacity` of them reserved so that giving one back never allocates, and a switch for whether
// given-back items are kept at all. Each store takes and gives back by its own rules, under `mutex`.

#include <cstddef>
#include <mutex>
#include <vector>

namespace shardopt {

template <class T>
struct kept_store {
  kept_store(std::size_t capacity, bool on) : keeping(on) { kept.reserve(capacity); }

  /// Frees every kept item (after the lock is let go); the room stays reserved.
  void release() {
    std::vector<T> freed;
    const std::lock_guard<std::mutex> lock{mutex};
    freed.reserve(kept.size());
    for (auto& item : kept)
      freed.push_back(std::move(item));
    kept.clear();
  }

  /// Whether given-back items are kept.
  void keep(bool on) {
    const std::lock_guard<std::mutex> lock{mutex};
    keeping = on;
  }

  std::size_t size() {
    const std::lock_guard<std::mutex> lock{mutex};
    return kept.size();
  }

  std::mutex mutex;
  std::vector<T> kept;
  bool keeping;
};

} // namespace shardopt

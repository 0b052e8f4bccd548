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
    take_all(freed);
  }

  /// Whether given-back items are kept.
  void keep(bool on) {
    const std::lock_guard<std::mutex> lock{mutex};
    keeping = on;
  }

  /// One more holder (a node with drivers, a driver's run): keeping is on while there are any.
  /// The store is the process's, and so may be held by several at once.
  void hold() {
    const std::lock_guard<std::mutex> lock{mutex};
    ++holders;
    keeping = true;
  }

  /// One holder fewer: with the last one gone, keeping turns off and every kept item is freed,
  /// so that what finished runs drop later (replies still queued) is freed, not kept for no one.
  void let_go() {
    std::vector<T> freed;
    const std::lock_guard<std::mutex> lock{mutex};
    if (holders == 0 || --holders > 0)
      return;
    keeping = false;
    take_all(freed);
  }

  std::size_t size() {
    const std::lock_guard<std::mutex> lock{mutex};
    return kept.size();
  }

  std::mutex mutex;
  std::vector<T> kept;
  bool keeping;
  int holders = 0;

private:
  /// Moves every kept item into `freed` (declared before the lock: they are freed after it).
  void take_all(std::vector<T>& freed) {
    freed.reserve(kept.size());
    for (auto& item : kept)
      freed.push_back(std::move(item));
    kept.clear();
  }
};

} // namespace shardopt

#pragma once

// A blocking call run on a thread of its own and taken once it is done, for a driver whose
// evaluations must not wait on a name server or on a host that drops packets. The thread is
// detached, so whoever started the call never waits for it, not even when it ends: the call must
// own everything it uses (copies, no references, no actor system).

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace shardopt::actors {

template <class T>
class off_thread {
public:
  /// Whether a call was started and its result not taken yet.
  bool running() const { return box_ != nullptr; }

  /// Starts `call` on a thread of its own (its result is `failed` if it throws); does nothing
  /// while another call is running.
  void start(std::function<T()> call, T failed) {
    if (box_)
      return;
    auto fresh = std::make_shared<box>();
    try {
      std::thread([box = fresh, call = std::move(call), failed]() mutable {
        std::optional<T> value;
        try {
          value = call();
        } catch (...) {  // nothing escapes a detached thread
          value = std::move(failed);
        }
        const std::lock_guard<std::mutex> lock{box->mutex};
        box->value = std::move(value);
      }).detach();
    } catch (...) {  // no thread to be had (a process at its limit): the call failed
      fresh->value = std::move(failed);
    }
    box_ = std::move(fresh);
  }

  /// The call's result once it is done (then a new call may start); nothing before.
  std::optional<T> take() {
    if (!box_)
      return std::nullopt;
    std::optional<T> out;
    {
      const std::lock_guard<std::mutex> lock{box_->mutex};
      out = std::move(box_->value);
    }
    if (out)
      box_.reset();
    return out;
  }

private:
  struct box {
    std::mutex mutex;
    std::optional<T> value;
  };
  std::shared_ptr<box> box_;
};

} // namespace shardopt::actors

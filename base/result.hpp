#pragma once

// The project's one error shape, below every layer: a `failure` (a message naming what and where,
// and its kind) carried as a value in `result<T>`. No layer below apps/ throws to report one.

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace shardopt {

/// What kind of thing failed, for front doors that sort failures (the Python module raises
/// ValueError, FileNotFoundError or RuntimeError by it, the CLI's exit code is 1 for all). Every
/// failure is made with its kind; none is assumed. The message stays the one description.
enum class failure_kind {
  invalid,    ///< bad input: an option, a file's contents, an array, a label, a peer's request
  not_found,  ///< a file or directory that does not exist
  runtime,    ///< the world did not cooperate: a lost peer, a failed evaluation, a full disk, an
              ///< unreadable file
};

/// A failure carried as a value: one human-readable message that names what went wrong and where
/// (`train.csv:1042: expected 785 fields, got 784`), and its kind. Context is prepended as the
/// error travels up; the kind travels unchanged.
class failure {
public:
  failure(std::string message, failure_kind kind) : message_(std::move(message)), kind_(kind) {}

  /// The full message, outermost context first.
  const std::string& message() const noexcept { return message_; }
  failure_kind kind() const noexcept { return kind_; }

  /// Returns this failure with `context` prepended, separated by ": ".
  failure with_context(const std::string& context) const {
    return failure{context + ": " + message_, kind_};
  }

private:
  std::string message_;
  failure_kind kind_;
};

/// Either a value of type T or a `failure`. The project's error channel below `apps/`, where no
/// layer may throw (xgboost's collective::Result is the model). Check `ok()` before `value()`.
template <class T>
class [[nodiscard]] result {
public:
  result(T value) : state_(std::move(value)) {}            // NOLINT: implicit by design
  result(failure error) : state_(std::move(error)) {}      // NOLINT: implicit by design

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const failure& error() const { return std::get<1>(state_); }

  /// Prepends `context` to the failure, if any; a value passes through unchanged.
  result with_context(const std::string& context) && {
    if (ok())
      return std::move(*this);
    return error().with_context(context);
  }

private:
  std::variant<T, failure> state_;
};

/// A result that carries no value: success, or a failure.
template <>
class [[nodiscard]] result<void> {
public:
  result() = default;
  result(failure error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const noexcept { return !error_; }
  explicit operator bool() const noexcept { return ok(); }
  const failure& error() const { return *error_; }

  result with_context(const std::string& context) && {
    if (ok())
      return std::move(*this);
    return error_->with_context(context);
  }

private:
  std::optional<failure> error_;
};

/// Bad input, named in `message`: `return fail_invalid(path + ":3: expected 5 fields, got 4")`.
inline failure fail_invalid(std::string message) {
  return failure{std::move(message), failure_kind::invalid};
}

/// A file or directory that does not exist.
inline failure fail_not_found(std::string message) {
  return failure{std::move(message), failure_kind::not_found};
}

/// Something the program could not do though the input was right: a lost peer, a full disk.
inline failure fail_runtime(std::string message) {
  return failure{std::move(message), failure_kind::runtime};
}

} // namespace shardopt

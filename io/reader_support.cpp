#include "io/reader_support.hpp"

#include <array>

#include <algorithm>
#include <cerrno>
#include <charconv>

#include <fast_float/fast_float.h>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>

namespace shardopt::io::detail {

namespace {

/// The largest request passed to one gzread call (its length is an unsigned int, its result an int).
constexpr std::uint64_t max_gzread = std::uint64_t{1} << 30;

} // namespace

result<gz_input> gz_input::open(const std::string& path, std::uint64_t max_decompressed) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return fail_not_found(path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    return fail_invalid(path + ": is a directory, not a file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec)
    return fail_runtime(path + ": cannot open: " + ec.message());
  errno = 0;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int err = errno;
    return fail_runtime(path + ": cannot open: " + (err != 0 ? std::strerror(err) : "out of memory"));
  }
  // A large buffer lets zlib read big payloads in few system calls.
  gzbuffer(file, 1U << 17);
  return gz_input{path, file, size, max_decompressed};
}

result<void> gz_input::skip(std::uint64_t size) {
  std::array<unsigned char, 1 << 16> scratch{};
  while (size > 0) {
    const auto chunk = std::min<std::uint64_t>(size, scratch.size());
    auto got = read(scratch.data(), chunk);
    if (!got)
      return got.error();
    if (got.value() < chunk)
      return fail_invalid(path_ + ": truncated: the data ends before the records asked for");
    size -= chunk;
  }
  return {};
}

result<void> gz_input::seek(std::uint64_t offset) {
  if (produced_ != 0)
    return fail_runtime(path_ + ": cannot seek after reading");
  // gzdirect looks ahead at the header: plain files are seeked, compressed ones decompressed up to
  // the offset (counted against the limit).
  if (gzdirect(file_.get()) == 0)
    return skip(offset);
  if (offset > file_size_)
    return fail_invalid(path_ + ": truncated: the data ends before the records asked for");
  if (gzseek(file_.get(), static_cast<z_off_t>(offset), SEEK_SET) < 0)
    return fail_runtime(path_ + ": cannot seek to byte " + std::to_string(offset));
  produced_ = offset;
  return {};
}

result<std::uint64_t> gz_input::read(void* buffer, std::uint64_t size) {
  auto* out = static_cast<unsigned char*>(buffer);
  std::uint64_t done = 0;
  while (done < size) {
    const auto chunk = static_cast<unsigned>(std::min(size - done, max_gzread));
    const int got = gzread(file_.get(), out + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file_.get(), &code);
      return fail_invalid(path_ + ": read error: " + (message != nullptr ? message : "unknown zlib error"));
    }
    if (got == 0)
      break;
    done += static_cast<std::uint64_t>(got);
    produced_ += static_cast<std::uint64_t>(got);
    if (max_decompressed_ > 0 && produced_ > max_decompressed_ && compressed())
      return fail_invalid(path_ + ": decompresses to more than " + std::to_string(max_decompressed_) +
                  " bytes, the limit on decompressed input (read_options::max_decompressed); raise it "
                  "if the file is genuine");
  }
  return done;
}

bool gz_input::compressed() const { return gzdirect(file_.get()) == 0; }

std::optional<double> parse_number(std::string_view text) {
  // from_chars rejects a leading '+', which LIBSVM labels ("+1") commonly carry.
  if (text.size() > 1 && text.front() == '+' && text[1] != '-' && text[1] != '+')
    text.remove_prefix(1);
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = fast_float::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end || !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::optional<std::int64_t> parse_integer(std::string_view text) {
  const bool negative = !text.empty() && text.front() == '-';
  if (negative)
    text.remove_prefix(1);
  if (text.empty())
    return std::nullopt;
  // Magnitudes up to 2^63 (the most negative value): digits checked one at a time for overflow.
  constexpr auto limit = std::uint64_t{1} << 63;
  std::uint64_t magnitude = 0;
  for (const char c : text) {
    const auto digit = static_cast<unsigned>(c - '0');
    if (digit > 9 || magnitude > (limit - digit) / 10)
      return std::nullopt;
    magnitude = magnitude * 10 + digit;
  }
  if (!negative && magnitude == limit)
    return std::nullopt;
  return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

std::string_view trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos)
    return {};
  const auto last = text.find_last_not_of(" \t");
  return text.substr(first, last - first + 1);
}

bool next_line(std::string_view& rest, std::string_view& line) {
  if (rest.empty())
    return false;
  const auto end = rest.find('\n');
  if (end == std::string_view::npos) {
    line = rest;
    rest = {};
  } else {
    line = rest.substr(0, end);
    rest.remove_prefix(end + 1);
  }
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  return true;
}

std::string quote(std::string_view text) {
  constexpr std::size_t max_shown = 40;
  if (text.size() <= max_shown)
    return "'" + std::string{text} + "'";
  return "'" + std::string{text.substr(0, max_shown)} + "...'";
}

std::string format_number(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<std::int64_t>(value));
  char buffer[64];
  const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc{})
    return std::to_string(value);
  return std::string(buffer, ptr);
}

} // namespace shardopt::io::detail

#include "io/text_source.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>

namespace shardopt::io::detail {

namespace {

/// Whether `path` starts with gzip's magic bytes.
bool gzip_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::array<unsigned char, 2> magic{};
  in.read(reinterpret_cast<char*>(magic.data()), 2);
  return in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

/// The number of bytes the text of `path` has: its size, or for gzip what it decompresses to.
result<std::int64_t> text_size(const std::string& path, std::uint64_t max_decompressed) {
  auto input = gz_input::open(path, max_decompressed);
  if (!input)
    return input.error();
  if (!gzip_file(path))
    return static_cast<std::int64_t>(input->file_size());
  std::vector<char> scratch(std::size_t{1} << 20);
  std::int64_t total = 0;
  for (;;) {
    auto got = input->read(scratch.data(), scratch.size());
    if (!got)
      return got.error();
    if (*got == 0)
      return total;
    total += static_cast<std::int64_t>(*got);
  }
}

} // namespace

result<text_source> text_source::open(const std::string& path, std::uint64_t max_decompressed,
                                      std::int64_t part, std::int64_t parts,
                                      std::size_t buffer_bytes) {
  if (parts <= 1)
    return open_range(path, max_decompressed, 0, INT64_MAX, buffer_bytes);
  auto size = text_size(path, max_decompressed);
  if (!size)
    return size.error();
  return open_range(path, max_decompressed, *size * part / parts, *size * (part + 1) / parts, buffer_bytes);
}

result<text_source> text_source::open_range(const std::string& path, std::uint64_t max_decompressed,
                                            std::int64_t begin, std::int64_t end, std::size_t buffer_bytes) {
  text_source source;
  source.path_ = path;
  source.max_decompressed_ = max_decompressed;
  source.capacity_ = std::max<std::size_t>(buffer_bytes, 2);
  source.begin_ = std::max<std::int64_t>(begin, 0);
  source.end_ = end;
  if (auto ok = source.rewind(); !ok)
    return ok.error();
  // Plain text needs no buffer larger than itself (compressed text may be larger than its file).
  if (!gzip_file(path))
    source.capacity_ = std::min<std::size_t>(source.capacity_, static_cast<std::size_t>(source.input_->file_size()) + 1);
  return source;
}

text_source text_source::of(std::string_view text, std::size_t buffer_bytes) {
  text_source source;
  source.memory_ = text;
  source.capacity_ = std::clamp<std::size_t>(buffer_bytes, 2, text.size() + 1);
  source.end_ = static_cast<std::int64_t>(text.size());
  source.aligned_ = true;
  return source;
}

result<void> text_source::rewind() {
  // The buffer starts at its first size again, so that a second pass cuts the text into the same
  // buffers as the first (a parser's counts depend on it).
  buffer_.resize(std::min(buffer_.size(), capacity_));
  kept_ = 0;
  handed_ = false;
  stop_ = 0;
  exhausted_ = false;
  finished_ = false;
  aligned_ = begin_ == 0;
  // A part after the first starts reading one byte early: a line starts at `begin` only if the
  // byte before it ends a line.
  const std::int64_t from = begin_ > 0 ? begin_ - 1 : 0;
  offset_ = from;
  if (!input_ && path_.empty()) {
    memory_at_ = static_cast<std::size_t>(from);
    return {};
  }
  input_.reset();
  auto input = gz_input::open(path_, max_decompressed_);
  if (!input)
    return input.error();
  if (from > 0)
    if (auto ok = input->seek(static_cast<std::uint64_t>(from)); !ok)
      return ok;
  input_.emplace(std::move(*input));
  return {};
}

result<std::size_t> text_source::read(char* out, std::size_t size) {
  if (!input_) {
    const auto n = std::min(size, memory_.size() - std::min(memory_at_, memory_.size()));
    std::memcpy(out, memory_.data() + memory_at_, n);
    memory_at_ += n;
    return n;
  }
  auto got = input_->read(out, size);
  if (!got)
    return got.error();
  return static_cast<std::size_t>(*got);
}

result<std::string_view> text_source::next() {
  // What the last call handed out is done with; the unfinished line after it moves to the front.
  if (handed_) {
    std::memmove(buffer_.data(), buffer_.data() + stop_, used_ - stop_);
    offset_ += static_cast<std::int64_t>(stop_);
    kept_ = used_ - stop_;
    handed_ = false;
    stop_ = 0;
  }
  while (!finished_) {
    // A buffer that holds nothing but an unfinished line grows to take the rest of it.
    if (buffer_.size() < capacity_)
      buffer_.resize(capacity_);
    if (kept_ == buffer_.size())
      buffer_.resize(buffer_.size() * 2);
    std::size_t used = kept_;
    while (!exhausted_ && used < buffer_.size()) {
      auto got = read(buffer_.data() + used, buffer_.size() - used);
      if (!got)
        return got.error();
      exhausted_ = *got == 0;
      used += *got;
    }
    const std::string_view all{buffer_.data(), used};
    std::size_t start = 0;
    if (!aligned_) {
      const auto newline = all.find('\n');
      if (newline == std::string_view::npos) {
        offset_ += static_cast<std::int64_t>(used);
        kept_ = 0;
        finished_ = exhausted_;
        continue;
      }
      start = newline + 1;
      aligned_ = true;
    }
    // Whole lines: up to the last newline, or everything at the end of the text.
    std::size_t stop = used;
    if (!exhausted_) {
      const auto newline = all.rfind('\n');
      if (newline == std::string_view::npos || newline < start) {
        std::memmove(buffer_.data(), buffer_.data() + start, used - start);
        offset_ += static_cast<std::int64_t>(start);
        kept_ = used - start;
        continue;
      }
      stop = newline + 1;
    }
    // A part ends before the first line that starts at or past its end.
    const std::int64_t end_at = end_ - offset_;
    if (end_at <= static_cast<std::int64_t>(start)) {
      finished_ = true;
      break;
    }
    if (end_at < static_cast<std::int64_t>(stop)) {
      const auto newline = all.find('\n', static_cast<std::size_t>(end_at - 1));
      stop = std::min(stop, newline == std::string_view::npos ? used : newline + 1);
    }
    if (static_cast<std::int64_t>(stop) >= end_at || (exhausted_ && stop == used))
      finished_ = true;
    if (stop > start) {
      handed_ = true;
      stop_ = stop;
      used_ = used;
      return all.substr(start, stop - start);
    }
  }
  return std::string_view{};
}

} // namespace shardopt::io::detail

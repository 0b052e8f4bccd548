#include "io/text_parse.hpp"

#include <atomic>
#include <thread>

namespace shardopt::io::detail {

std::pair<std::int64_t, std::int64_t> count_bytes(std::string_view text, char a, char b) {
  // 255 rounds of 64 byte-wide counters at a time: they cannot overflow, and the compiler keeps
  // them in vector registers.
  constexpr std::size_t lanes = 64;
  constexpr std::size_t rounds = 255;
  const auto* q = reinterpret_cast<const unsigned char*>(text.data());
  const auto ua = static_cast<unsigned char>(a);
  const auto ub = static_cast<unsigned char>(b);
  std::int64_t total_a = 0;
  std::int64_t total_b = 0;
  std::size_t i = 0;
  while (i + lanes * rounds <= text.size()) {
    unsigned char in_a[lanes] = {};
    unsigned char in_b[lanes] = {};
    for (std::size_t r = 0; r < rounds; ++r, i += lanes)
      for (std::size_t k = 0; k < lanes; ++k) {
        in_a[k] = static_cast<unsigned char>(in_a[k] + (q[i + k] == ua));
        in_b[k] = static_cast<unsigned char>(in_b[k] + (q[i + k] == ub));
      }
    for (std::size_t k = 0; k < lanes; ++k) {
      total_a += in_a[k];
      total_b += in_b[k];
    }
  }
  for (; i < text.size(); ++i) {
    total_a += q[i] == ua;
    total_b += q[i] == ub;
  }
  return {total_a, total_b};
}

std::vector<std::string_view> cut_lines(std::string_view text, std::size_t count) {
  std::vector<std::string_view> pieces;
  count = std::max<std::size_t>(count, 1);
  std::size_t begin = 0;
  for (std::size_t i = 1; i <= count && begin < text.size(); ++i) {
    std::size_t end = text.size();
    if (i < count) {
      const auto target = std::max(begin, text.size() * i / count);
      const auto newline = target == 0 ? std::string_view::npos : text.find('\n', target - 1);
      end = newline == std::string_view::npos ? text.size() : newline + 1;
    }
    if (end > begin)
      pieces.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return pieces;
}

} // namespace shardopt::io::detail

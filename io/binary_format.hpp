#pragma once

// The binary dataset's file layout, shared by its reader (binary_cache.cpp) and its writer
// (binary_writer.cpp): a fixed 152-byte header, the source's name, then 64-byte aligned sections
// (labels, line numbers, CSR row starts and column indices, values). Hashed data has the
// hashing's description (JSON) between the name and the labels. Internal to io.

#include <array>
#include <cstdint>
#include <string_view>

namespace shardopt::io::binary_format {

constexpr std::array<char, 8> magic{'S', 'H', 'O', 'P', 'T', 'B', 'I', 'N'};
constexpr std::uint32_t format_version = 2;  // 2: the hashing's description; version 1 files read as ever
constexpr std::uint32_t byte_order = 0x01020304;
constexpr std::uint64_t alignment = 64;
constexpr std::uint32_t max_name_bytes = 4096;
constexpr std::uint32_t max_hashing_bytes = 65536;
constexpr std::uint32_t pixels_flag = 1;  // IDX pixels: scaled by 1/255 by default
constexpr std::uint32_t lines_flag = 2;   // examples came from text lines (their numbers are kept)

/// The fixed part of the header, as it lies in the file (followed by the source's name).
struct file_header {
  std::array<char, 8> magic;
  std::uint32_t version;
  std::uint32_t byte_order;
  std::uint32_t layout;  // 0: dense rows, 1: CSR
  std::uint32_t flags;
  std::int64_t rows;
  std::int64_t cols;
  std::int64_t nonzeros;
  std::uint64_t labels_at;
  std::uint64_t lines_at;
  std::uint64_t starts_at;
  std::uint64_t indices_at;
  std::uint64_t values_at;
  std::uint64_t file_bytes;
  std::uint64_t source_size;
  std::int64_t source_mtime_ns;
  std::int32_t format;
  std::int32_t label_column;
  std::int32_t header_row;  // -1: detected, 0: no, 1: yes
  std::uint32_t name_bytes;
  std::int64_t features;
  std::int64_t limit;
  std::uint32_t crc;  // CRC-32 of the header, the name and the hashing, with this field zero
  std::uint32_t hashing_bytes;  // the hashing's description (io::describe) after the name; 0: none
};
static_assert(sizeof(file_header) == 152, "the header's layout is part of the file format");

inline std::uint64_t aligned(std::uint64_t at) {
  return (at + alignment - 1) / alignment * alignment;
}

/// CRC-32 of the header (its crc field zero) and `name`: the name followed by the hashing's text.
std::uint32_t checksum(file_header header, std::string_view name);

} // namespace shardopt::io::binary_format

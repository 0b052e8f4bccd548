#pragma once

// Fuzz inputs start with one byte that picks the reader's options; the rest is the file.

namespace shardopt::fuzz {

/// Options picked by the bits of one input byte, one choice after another: `take(3)` is the byte
/// modulo 3, and the next choice uses what is left of it (the byte divided by 3).
class chooser {
public:
  explicit chooser(unsigned char byte) : left_(byte) {}

  /// A number in [0, n).
  unsigned take(unsigned n) {
    const unsigned picked = left_ % n;
    left_ /= n;
    return picked;
  }

private:
  unsigned left_;
};

} // namespace shardopt::fuzz

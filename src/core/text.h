// Small string and integer helpers every module uses.
#pragma once

#include <cstdint>
#include <string>

namespace tilefuse {

// Printed IR on one line of a message: every run of spaces and newlines
// becomes one space, and none lead or trail (a hoisted loop nest prints
// over several lines, an expression ends in a newline).
inline std::string one_line(const std::string& text) {
  std::string out;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

// Text from a file quoted in a message: bytes outside printable ASCII
// (a NUL, a control character, non-ASCII) as \xNN, so that the message
// stays whole and one line.
inline std::string printable(const std::string& text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The smallest power of two >= v (1 for v <= 1).
inline int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

}  // namespace tilefuse

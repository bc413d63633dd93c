// Rendering of diagnostics and reading program files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/memory.h"
#include "frontend/frontend.h"
#include "frontend/lexer.h"

namespace tilefuse {

namespace {

bool is_continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// `line` as shown under a diagnostic: each control byte other than a tab
// (a NUL would end the message where it is printed, an ESC would drive the
// terminal) as its Unicode control picture, U+2400 + byte (U+2421 for DEL):
// one code point for one, so the caret's columns stay as counted.
std::string shown(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (const char ch : line) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      const unsigned cp = c == 0x7F ? 0x2421u : 0x2400u + c;
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace

std::string format_diagnostic(const std::string& file, std::string_view source,
                              const UserError& error) {
  const SourceLoc& loc = error.loc();
  if (!loc.valid()) return fmt::format("{}: error: {}\n", file, error.what());
  std::string out = fmt::format("{}:{}:{}: error: {}\n", file, loc.line, loc.col, error.what());
  const std::string_view full = frontend::source_line(source, loc.line);
  // The byte offset of each code point (columns count code points, as the
  // lexer does).
  std::vector<size_t> cps;
  for (size_t i = 0; i < full.size(); ++i)
    if (!is_continuation_byte(full[i])) cps.push_back(i);
  const int n = static_cast<int>(cps.size());
  // A long line (generated code, a minified expression) shows a window of
  // kWindow code points around the column, marked by "..." where cut.
  constexpr int kWindow = 160;
  int first = 0, last = n;
  if (n > kWindow) {
    first = std::clamp(loc.col - 1 - kWindow / 2, 0, n - kWindow);
    last = first + kWindow;
  }
  const size_t b0 = first == 0 ? 0 : cps[static_cast<size_t>(first)];
  const size_t b1 = last < n ? cps[static_cast<size_t>(last)] : full.size();
  const std::string_view line = full.substr(b0, b1 - b0);
  const bool cut_left = first > 0, cut_right = last < n;
  out += "  ";
  if (cut_left) out += "...";
  out += shown(line);
  if (cut_right) out += "...";
  out += "\n  ";
  if (cut_left) out += "   ";
  // The caret line copies the tabs of the source line so that it lines up
  // under any tab width.
  int col = first + 1;
  size_t i = 0;
  while (col < loc.col) {
    if (i < line.size()) {
      out += line[i] == '\t' ? '\t' : ' ';
      ++i;
      while (i < line.size() && is_continuation_byte(line[i])) ++i;
    } else {
      out += ' ';
    }
    ++col;
  }
  // Underline the token, but not past the end of the shown line (a
  // multi-line string underlines its first line only).
  int remaining = 0;
  for (size_t j = i; j < line.size(); ++j) remaining += is_continuation_byte(line[j]) ? 0 : 1;
  int length = std::max(1, std::min(loc.length, remaining));
  out += '^';
  out.append(static_cast<size_t>(length - 1), '~');
  out += '\n';
  return out;
}

namespace {

// What a file that is not a regular file is, for messages.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

std::string read_program_file(const std::string& path, const LoadOptions& options) {
  const auto cannot = [&](const std::string& why) {
    return UserError(fmt::format("cannot read '{}': {}", path, why));
  };
  // POSIX open(2) with O_NONBLOCK, so that opening a FIFO with no writer does
  // not wait for one, and reads that would block are seen (EAGAIN) rather
  // than waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int open_errno = errno;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
      throw cannot("not a regular file (a socket)");
    throw cannot(std::strerror(open_errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw cannot(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw cannot("it is a directory");
  const bool fifo = S_ISFIFO(st.st_mode);
  // At most max_bytes + 1 bytes, whatever the file claims to be.
  const auto too_long = [&] {
    return cannot(fmt::format("it is longer than {}, the most a program may be{}",
                              format_bytes(options.max_bytes),
                              options.raise_hint.empty() ? "" : " (" + options.raise_hint + ")"));
  };
  if (S_ISREG(st.st_mode) && st.st_size > options.max_bytes) throw too_long();
  std::string text;
  char buf[1 << 16];
  bool blocking = false;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // Nothing to read yet. A pipe or FIFO that gives EAGAIN has a writer
        // (`<(gen)` still generating): wait for it. Anything else (a
        // terminal, a device) might never give input.
        if (!fifo)
          throw cannot(fmt::format("not a regular file ({}) and it has no input ready",
                                   file_kind(st.st_mode)));
        const int flags = ::fcntl(fd, F_GETFL);
        if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
          throw cannot(std::strerror(errno));
        blocking = true;
        continue;
      }
      throw cannot(std::strerror(errno));
    }
    if (n == 0) {
      // A FIFO read empty before any wait has no writer: a named FIFO that
      // nothing has opened for writing (waiting for one could be forever), or
      // a pipe whose writer wrote nothing.
      if (fifo && !blocking && text.empty())
        throw cannot("not a regular file (a FIFO) and nothing is writing to it");
      break;
    }
    text.append(buf, static_cast<size_t>(n));
    if (static_cast<int64_t>(text.size()) > options.max_bytes) throw too_long();
  }
  return text;
}

Program load_program(const std::string& path, const LoadOptions& options) {
  return parse_program(read_program_file(path, options), path);
}

}  // namespace tilefuse

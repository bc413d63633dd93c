// Rendering of diagnostics and reading program files.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "frontend/frontend.h"
#include "frontend/lexer.h"

namespace tilefuse {

namespace {

bool is_continuation_byte(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

}  // namespace

std::string format_diagnostic(const std::string& file, std::string_view source,
                              const UserError& error) {
  const SourceLoc& loc = error.loc();
  if (!loc.valid()) return fmt::format("{}: error: {}\n", file, error.what());
  std::string out = fmt::format("{}:{}:{}: error: {}\n", file, loc.line, loc.col, error.what());
  std::string_view line = frontend::source_line(source, loc.line);
  out += "  ";
  out += line;
  out += "\n  ";
  // Columns count code points (as the lexer does). The caret line copies the
  // tabs of the source line so that it lines up under any tab width.
  int col = 1;
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
  // Underline the token, but not past the end of the line (a multi-line
  // string underlines its first line only).
  int remaining = 0;
  for (size_t j = i; j < line.size(); ++j) remaining += is_continuation_byte(line[j]) ? 0 : 1;
  int length = std::max(1, std::min(loc.length, remaining));
  out += '^';
  out.append(static_cast<size_t>(length - 1), '~');
  out += '\n';
  return out;
}

std::string read_program_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(fmt::format("cannot read '{}': it is a directory", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UserError(fmt::format("cannot read '{}': read error", path));
  return text.str();
}

Program load_program(const std::string& path) {
  return parse_program(read_program_file(path), path);
}

}  // namespace tilefuse

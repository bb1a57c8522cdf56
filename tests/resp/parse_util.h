// Test helpers: run a Parser over an input split into chunks and collect what a server would see.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "resp/parser.h"

namespace cuckood::resp::testing {

using Command = std::vector<std::string>;

struct Outcome {
  std::vector<Command> commands;
  bool failed = false;
  std::string error;  // set when failed

  bool operator==(const Outcome& o) const {
    return commands == o.commands && failed == o.failed && error == o.error;
  }
};

inline std::string Escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\' && c != '"') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

inline std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{";
  for (const auto& cmd : o.commands) {
    os << "[";
    for (const auto& arg : cmd) {
      os << '"' << Escape(arg) << "\" ";
    }
    os << "] ";
  }
  if (o.failed) {
    os << "error: " << o.error;
  }
  return os << "}";
}

// Feeds each chunk and drains every command after it, stopping at the first error.
inline Outcome ParseChunks(const std::vector<std::string_view>& chunks,
                           const ParserLimits& limits = {}) {
  Parser parser(limits);
  Outcome outcome;
  std::vector<std::string_view> argv;
  for (std::string_view chunk : chunks) {
    parser.Feed(chunk);
    Parser::Result result;
    while ((result = parser.Next(&argv)) == Parser::Result::kCommand) {
      outcome.commands.emplace_back(argv.begin(), argv.end());
    }
    if (result == Parser::Result::kError) {
      outcome.failed = true;
      outcome.error = parser.error();
      break;
    }
  }
  return outcome;
}

inline Outcome ParseWhole(std::string_view input, const ParserLimits& limits = {}) {
  return ParseChunks({input}, limits);
}

inline Outcome ParseBytewise(std::string_view input, const ParserLimits& limits = {}) {
  std::vector<std::string_view> chunks;
  for (size_t i = 0; i < input.size(); ++i) {
    chunks.push_back(input.substr(i, 1));
  }
  return ParseChunks(chunks, limits);
}

inline Outcome Failure(std::vector<Command> commands, std::string error) {
  return Outcome{std::move(commands), true, std::move(error)};
}

inline Outcome Success(std::vector<Command> commands) {
  return Outcome{std::move(commands), false, ""};
}

// The single error `input` produces, whether fed whole or byte by byte ("" if none).
inline std::string ErrorOf(std::string_view input, const ParserLimits& limits = {}) {
  const Outcome whole = ParseWhole(input, limits);
  const Outcome bytewise = ParseBytewise(input, limits);
  return whole == bytewise ? whole.error : "split-dependent outcome";
}

}  // namespace cuckood::resp::testing

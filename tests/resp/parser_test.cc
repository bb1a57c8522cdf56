// Multibulk parsing, incremental feeding and the parser's buffer management.
#include "resp/parser.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "tests/resp/parse_util.h"

namespace cuckood::resp {
namespace {

using testing::Command;
using testing::Outcome;
using testing::ParseBytewise;
using testing::ParseChunks;
using testing::ParseWhole;
using testing::Success;

using namespace std::string_literals;

// Multibulk and inline commands, binary and empty args, and the requests Redis skips silently.
const std::string kPipeline =
    "*3\r\n$3\r\nSET\r\n$4\r\nk\r\ny\r\n$0\r\n\r\n"  // CRLF inside an arg, empty arg
    "PING\r\n"
    "\r\n"    // blank inline line: skipped
    "*0\r\n"  // empty multibulk: skipped
    "set \"a b\" 'c d' \"\\x41\\n\" \"\"\n"
    "*-1\r\n"                              // negative count: skipped
    "*2\r\n$4\r\nECHO\r\n$3\r\na\0b\r\n"s  // NUL inside an arg
    " \t \n"                               // blanks only: skipped
    "*1\r\n$4\r\nQUIT\r\n";

const std::vector<Command> kPipelineCommands = {
    {"SET", "k\r\ny", ""}, {"PING"}, {"set", "a b", "c d", "A\n", ""}, {"ECHO", "a\0b"s}, {"QUIT"},
};

TEST_CASE("A pipeline parses into the same commands at every split point", "[parser]") {
  const Outcome expected = Success(kPipelineCommands);
  REQUIRE(ParseWhole(kPipeline) == expected);

  SECTION("fed byte by byte") {
    CHECK(ParseBytewise(kPipeline) == expected);
  }

  SECTION("fed in two parts, split at each offset") {
    const std::string_view input = kPipeline;
    for (size_t i = 0; i <= input.size(); ++i) {
      INFO("split at " << i);
      CHECK(ParseChunks({input.substr(0, i), input.substr(i)}) == expected);
    }
  }

  SECTION("fed in three parts, split at each pair of offsets") {
    const std::string_view input = kPipeline;
    for (size_t i = 0; i <= input.size(); ++i) {
      for (size_t j = i; j <= input.size(); j += 3) {
        INFO("split at " << i << " and " << j);
        CHECK(ParseChunks({input.substr(0, i), input.substr(i, j - i), input.substr(j)}) ==
              expected);
      }
    }
  }
}

TEST_CASE("A pipeline ending in a protocol error fails the same way at every split point",
          "[parser]") {
  const std::string input = kPipeline + "*1\r\n$x\r\n";
  const Outcome expected =
      testing::Failure(kPipelineCommands, "ERR Protocol error: invalid bulk length");
  REQUIRE(ParseWhole(input) == expected);
  CHECK(ParseBytewise(input) == expected);
  const std::string_view view = input;
  for (size_t i = 0; i <= view.size(); ++i) {
    INFO("split at " << i);
    CHECK(ParseChunks({view.substr(0, i), view.substr(i)}) == expected);
  }
}

TEST_CASE("Multibulk args are binary-safe", "[parser]") {
  const std::string arg = "\r\n\0$*\r\n\xff"s;
  const std::string input =
      "*2\r\n$3\r\nSET\r\n$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  CHECK(ParseWhole(input) == Success({{"SET", arg}}));
  CHECK(ParseBytewise(input) == Success({{"SET", arg}}));
}

TEST_CASE("An empty bulk is an empty arg", "[parser]") {
  CHECK(ParseWhole("*2\r\n$0\r\n\r\n$0\r\n\r\n") == Success({{"", ""}}));
}

TEST_CASE("Empty and negative multibulk counts are skipped without a command", "[parser]") {
  CHECK(ParseWhole("*0\r\n") == Success({}));
  CHECK(ParseWhole("*-1\r\n*-99\r\n") == Success({}));
  CHECK(ParseWhole("*0\r\n*1\r\n$4\r\nPING\r\n") == Success({{"PING"}}));
}

TEST_CASE("Bytes after a header's CR and after bulk data are skipped unchecked, as in Redis",
          "[parser]") {
  CHECK(ParseWhole("*1\r\n$3\r\nfooXY") == Success({{"foo"}}));
  CHECK(ParseWhole("*1\rx$4\ryPING\r\n") == Success({{"PING"}}));
  CHECK(ParseBytewise("*1\rx$4\ryPING\r\n") == Success({{"PING"}}));
}

TEST_CASE("Next asks for more until the command is whole", "[parser]") {
  Parser parser;
  std::vector<std::string_view> argv;
  parser.Feed("*2\r\n$3\r\nGET\r\n$3\r\nke");
  CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
  CHECK(argv.empty());
  CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
  parser.Feed("y\r");
  CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
  parser.Feed("\n");
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  CHECK(argv == std::vector<std::string_view>{"GET", "key"});
  CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
  CHECK(argv.empty());
}

TEST_CASE("argv views stay valid until the next parser call", "[parser]") {
  Parser parser;
  std::vector<std::string_view> first;
  std::vector<std::string_view> second;
  parser.Feed("*1\r\n$5\r\nfirst\r\nsecond \"x\\x41\"\r\n");
  REQUIRE(parser.Next(&first) == Parser::Result::kCommand);
  CHECK(parser.buffered() > 0);
  CHECK(first == std::vector<std::string_view>{"first"});
  REQUIRE(parser.Next(&second) == Parser::Result::kCommand);
  CHECK(second == std::vector<std::string_view>{"second", "xA"});
}

TEST_CASE("buffered() counts the bytes not yet parsed", "[parser]") {
  Parser parser;
  std::vector<std::string_view> argv;
  CHECK(parser.buffered() == 0);
  parser.Feed("*2\r\n$3\r\nfoo\r\n$3\r\nb");
  CHECK(parser.buffered() == 18);
  CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
  CHECK(parser.buffered() == 1);  // like Redis's qbuf: parsed args of the pending command are out
  parser.Feed("ar\r\nPING\r\n");
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  CHECK(parser.buffered() == 6);
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  CHECK(parser.buffered() == 0);
}

TEST_CASE("PrepareWrite and Commit receive bytes without a copy", "[parser]") {
  Parser parser;
  std::vector<std::string_view> argv;

  SECTION("committing fewer bytes than prepared") {
    char* room = parser.PrepareWrite(4096);
    const std::string_view part = "*2\r\n$4\r\nECHO\r\n";
    std::memcpy(room, part.data(), part.size());
    parser.Commit(part.size());
    CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
    parser.Commit(0);
    room = parser.PrepareWrite(16);
    std::memcpy(room, "$2\r\nhi\r\n", 8);
    parser.Commit(8);
    REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
    CHECK(argv == std::vector<std::string_view>{"ECHO", "hi"});
    CHECK(parser.buffered() == 0);
  }

  SECTION("mixed with Feed across many commands") {
    for (int i = 0; i < 1000; ++i) {
      const std::string cmd = "*2\r\n$4\r\nINCR\r\n$" + std::to_string(std::to_string(i).size()) +
                              "\r\n" + std::to_string(i) + "\r\n";
      const size_t half = cmd.size() / 2;
      parser.Feed(std::string_view(cmd).substr(0, half));
      CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);
      char* room = parser.PrepareWrite(cmd.size());
      std::memcpy(room, cmd.data() + half, cmd.size() - half);
      parser.Commit(cmd.size() - half);
      REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
      REQUIRE(argv.size() == 2);
      CHECK(argv[1] == std::to_string(i));
    }
    CHECK(parser.buffered() == 0);
  }
}

char PatternByte(size_t i) {
  return static_cast<char>((i * 131 + (i >> 12)) & 0xff);
}

TEST_CASE("A 100 MiB bulk split across many feeds parses in linear time", "[parser][big]") {
  constexpr size_t kSize = 100 * 1024 * 1024;
  const std::string header = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(kSize) + "\r\n";
  Parser parser;
  std::vector<std::string_view> argv;
  parser.Feed(header);
  REQUIRE(parser.Next(&argv) == Parser::Result::kNeedMore);

  // 4 KiB at a time, with a Next after each: a parser rescanning the bulk would take hours.
  constexpr size_t kChunk = 4096;
  std::string chunk(kChunk, '\0');
  for (size_t sent = 0; sent < kSize; sent += kChunk) {
    for (size_t i = 0; i < kChunk; ++i) {
      chunk[i] = PatternByte(sent + i);
    }
    if (sent % (2 * kChunk) == 0) {
      parser.Feed(chunk);
    } else {
      std::memcpy(parser.PrepareWrite(kChunk), chunk.data(), kChunk);
      parser.Commit(kChunk);
    }
    REQUIRE(parser.Next(&argv) == Parser::Result::kNeedMore);
  }
  CHECK(parser.buffered() == kSize);
  parser.Feed("\r\n*1\r\n$4\r\nPING\r\n");
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  REQUIRE(argv.size() == 3);
  CHECK(argv[0] == "SET");
  CHECK(argv[1] == "k");
  REQUIRE(argv[2].size() == kSize);
  size_t mismatches = 0;
  for (size_t i = 0; i < kSize; ++i) {
    mismatches += argv[2][i] != PatternByte(i) ? 1 : 0;
  }
  CHECK(mismatches == 0);
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  CHECK(argv == std::vector<std::string_view>{"PING"});

  // The big buffer is released once idle; parsing carries on normally.
  parser.Feed("*1\r\n$4\r\nPING\r\n");
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  CHECK(argv == std::vector<std::string_view>{"PING"});
}

TEST_CASE("A command with many args fed in small pieces keeps every arg", "[parser]") {
  constexpr int kArgs = 100000;
  std::string input = "*" + std::to_string(kArgs) + "\r\n";
  for (int i = 0; i < kArgs; ++i) {
    const std::string arg = std::to_string(i);
    input += "$" + std::to_string(arg.size()) + "\r\n" + arg + "\r\n";
  }
  std::vector<std::string_view> chunks;
  const std::string_view view = input;
  for (size_t i = 0; i < view.size(); i += 7) {
    chunks.push_back(view.substr(i, 7));
  }
  const Outcome outcome = ParseChunks(chunks);
  REQUIRE(outcome.commands.size() == 1);
  REQUIRE(outcome.commands[0].size() == kArgs);
  CHECK(outcome.commands[0][0] == "0");
  CHECK(outcome.commands[0][kArgs - 1] == std::to_string(kArgs - 1));
}

TEST_CASE("The views of commands parsed in a row stay valid together until the next Feed",
          "[parser]") {
  Parser parser;
  // multibulk and inline commands (an inline one is unescaped in place), fed at once
  parser.Feed(
      "*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$2\r\nx1\r\n"
      "cf.add k \"x\\x32\"\r\n"
      "*3\r\n$6\r\nCF.ADD\r\n$1\r\nk\r\n$2\r\nx3\r\n");
  std::vector<std::vector<std::string_view>> parsed(3);
  for (auto& argv : parsed) {
    REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  }
  std::vector<std::string_view> more;
  CHECK(parser.Next(&more) == Parser::Result::kNeedMore);
  CHECK(parsed[0] == std::vector<std::string_view>{"CF.ADD", "k", "x1"});
  CHECK(parsed[1] == std::vector<std::string_view>{"cf.add", "k", "x2"});
  CHECK(parsed[2] == std::vector<std::string_view>{"CF.ADD", "k", "x3"});
}

}  // namespace
}  // namespace cuckood::resp

// Protocol errors (Redis 7's texts) and the parser's limits.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "resp/parser.h"
#include "tests/resp/parse_util.h"

namespace cuckood::resp {
namespace {

using testing::ErrorOf;
using testing::Outcome;
using testing::ParseBytewise;
using testing::ParseChunks;
using testing::ParseWhole;
using testing::Success;

using namespace std::string_literals;

const std::string kTooBigCount = "ERR Protocol error: too big mbulk count string";
const std::string kInvalidCount = "ERR Protocol error: invalid multibulk length";
const std::string kTooBigBulkCount = "ERR Protocol error: too big bulk count string";
const std::string kInvalidBulk = "ERR Protocol error: invalid bulk length";
const std::string kTooBigInline = "ERR Protocol error: too big inline request";
const std::string kQueryBuffer = "ERR Protocol error: query buffer limit exceeded";

TEST_CASE("A malformed multibulk count is an invalid multibulk length", "[parser][errors]") {
  for (const char* count : {"", "abc", "1a", " 1", "1 ", "+1", "01", "-0", "--1", "-",
                            "99999999999999999999", "123456789012345678901"}) {
    INFO("count '" << count << "'");
    CHECK(ErrorOf("*"s + count + "\r\n") == kInvalidCount);
  }
}

TEST_CASE("Multibulk counts above max_multibulk_len are invalid; the limit itself is allowed",
          "[parser][errors]") {
  SECTION("default limit") {
    CHECK(ErrorOf("*2147483647\r\n").empty());  // INT_MAX, as Redis 7
    CHECK(ErrorOf("*2147483648\r\n") == kInvalidCount);
  }
  SECTION("custom limit") {
    ParserLimits limits;
    limits.max_multibulk_len = 3;
    CHECK(ParseWhole("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", limits) ==
          Success({{"a", "b", "c"}}));
    CHECK(ErrorOf("*4\r\n", limits) == kInvalidCount);
  }
}

TEST_CASE("A bulk header must start with '$'", "[parser][errors]") {
  CHECK(ErrorOf("*1\r\nX3\r\nfoo\r\n") == "ERR Protocol error: expected '$', got 'X'");
  CHECK(ErrorOf("*2\r\n$1\r\na\r\n:5\r\n") == "ERR Protocol error: expected '$', got ':'");
  SECTION("a CR or LF is shown as a space, as Redis's error replies do") {
    CHECK(ErrorOf("*1\r\n\r\n") == "ERR Protocol error: expected '$', got ' '");
    CHECK(ErrorOf("*1\r\n\n\r\n") == "ERR Protocol error: expected '$', got ' '");
  }
  SECTION("the header is judged only once its CR and one more byte are in") {
    CHECK(ParseWhole("*1\r\nX3") == Success({}));
    CHECK(ParseWhole("*1\r\nX3\r") == Success({}));
  }
}

TEST_CASE("A malformed or negative bulk length is invalid", "[parser][errors]") {
  for (const char* len : {"", "-1", "abc", "01", "-0", "+1", " 1", "1x", "99999999999999999999"}) {
    INFO("length '" << len << "'");
    CHECK(ErrorOf("*1\r\n$"s + len + "\r\n") == kInvalidBulk);
  }
}

TEST_CASE("Bulk lengths above max_bulk_len are invalid; the limit itself is allowed",
          "[parser][errors]") {
  SECTION("default limit (512 MiB)") {
    CHECK(ErrorOf("*1\r\n$536870912\r\n").empty());
    CHECK(ErrorOf("*1\r\n$536870913\r\n") == kInvalidBulk);
  }
  SECTION("custom limit") {
    ParserLimits limits;
    limits.max_bulk_len = 5;
    CHECK(ParseWhole("*1\r\n$5\r\nhello\r\n", limits) == Success({{"hello"}}));
    CHECK(ErrorOf("*1\r\n$6\r\nhello!\r\n", limits) == kInvalidBulk);
  }
}

TEST_CASE("Header and inline lines may run to max_inline_len bytes, not one more",
          "[parser][errors]") {
  ParserLimits limits;
  limits.max_inline_len = 16;

  SECTION("inline: 16 bytes before the LF pass, 17 fail, whether or not the LF has arrived") {
    const std::string ok(16, 'a');
    const std::string long_line(17, 'a');
    CHECK(ParseWhole(ok + "\n", limits) == Success({{ok}}));
    CHECK(ParseBytewise(ok + "\n", limits) == Success({{ok}}));
    CHECK(ParseWhole(ok, limits) == Success({}));
    CHECK(ErrorOf(long_line, limits) == kTooBigInline);
    CHECK(ErrorOf(long_line + "\n", limits) == kTooBigInline);
    CHECK(ErrorOf(std::string(100, 'a') + "\r\n", limits) == kTooBigInline);
  }

  SECTION("multibulk count line: 16 bytes before the CR pass, 17 fail") {
    // Sixteen bytes of a bad count reach the number check; seventeen are too long first.
    CHECK(ErrorOf("*" + std::string(15, 'x') + "\r\n", limits) == kInvalidCount);
    CHECK(ErrorOf("*" + std::string(16, 'x') + "\r\n", limits) == kTooBigCount);
    CHECK(ErrorOf("*" + std::string(16, 'x'), limits) == kTooBigCount);
    CHECK(ParseWhole("*" + std::string(15, 'x'), limits) == Success({}));
  }

  SECTION("bulk header line: 16 bytes before the CR pass, 17 fail") {
    CHECK(ErrorOf("*1\r\n$" + std::string(15, 'x') + "\r\n", limits) == kInvalidBulk);
    CHECK(ErrorOf("*1\r\n$" + std::string(16, 'x') + "\r\n", limits) == kTooBigBulkCount);
    CHECK(ErrorOf("*1\r\n$" + std::string(16, 'x'), limits) == kTooBigBulkCount);
  }

  SECTION("a long line fails the same at every split point") {
    const std::string input = "PING\r\n" + std::string(20, 'a') + "\n";
    const Outcome expected = testing::Failure({{"PING"}}, kTooBigInline);
    const std::string_view view = input;
    for (size_t i = 0; i <= view.size(); ++i) {
      INFO("split at " << i);
      CHECK(ParseChunks({view.substr(0, i), view.substr(i)}, limits) == expected);
    }
  }
}

TEST_CASE("Default line limit is 64 KiB, counting a CR before the LF", "[parser][errors]") {
  const std::string line(64 * 1024, 'a');
  CHECK(ParseWhole(line + "\n") == Success({{line}}));
  CHECK(ParseWhole(line.substr(1) + "\r\n") == Success({{line.substr(1)}}));
  // Redis accepts this one only when its 16 KiB reads happen to deliver the CRLF with the line.
  CHECK(ParseWhole(line + "\r\n") == testing::Failure({}, kTooBigInline));
  CHECK(ParseWhole(line) == Success({}));
  CHECK(ParseWhole(line + "a") == testing::Failure({}, kTooBigInline));
  CHECK(ParseWhole("*" + line) == testing::Failure({}, kTooBigCount));
  CHECK(ParseWhole("*1\r\n$" + line) == testing::Failure({}, kTooBigBulkCount));
  CHECK(ParseWhole("*" + line.substr(1)) == Success({}));
}

TEST_CASE("A NUL byte in a line stops the line from ending, as Redis's strchr does",
          "[parser][errors]") {
  ParserLimits limits;
  limits.max_inline_len = 16;
  SECTION("inline") {
    CHECK(ParseWhole("GET a\0b\r\n"s, limits) == Success({}));
    CHECK(ErrorOf("GET a\0b\r\nPING\r\nPING\r\n"s, limits) == kTooBigInline);
  }
  SECTION("bulk header") {
    CHECK(ParseWhole("*1\r\n$\0\r\n"s, limits) == Success({}));
    CHECK(ErrorOf("*1\r\n$\0\r\n$4\r\nPING\r\n$4\r\nPING\r\n"s, limits) == kTooBigBulkCount);
  }
  SECTION("bulk data may hold NUL bytes") {
    CHECK(ParseWhole("*1\r\n$3\r\n\0\0\0\r\n"s, limits) == Success({{"\0\0\0"s}}));
  }
}

TEST_CASE("Unparsed input above query_buffer_limit is an error", "[parser][errors]") {
  ParserLimits limits;
  limits.query_buffer_limit = 32;
  std::vector<std::string_view> argv;

  SECTION("a pending bulk over the limit") {
    Parser parser(limits);
    parser.Feed("*1\r\n$100\r\n" + std::string(32, 'x'));
    CHECK(parser.Next(&argv) == Parser::Result::kNeedMore);  // exactly the limit: allowed
    parser.Feed("x");
    CHECK(parser.Next(&argv) == Parser::Result::kError);
    CHECK(parser.error() == kQueryBuffer);
  }

  SECTION("complete commands arriving together never count against it") {
    std::string input;
    for (int i = 0; i < 20; ++i) {
      input += "*1\r\n$4\r\nPING\r\n";
    }
    const Outcome outcome = ParseWhole(input, limits);
    CHECK_FALSE(outcome.failed);
    CHECK(outcome.commands.size() == 20);
  }
}

TEST_CASE("After an error the parser keeps failing with the same message", "[parser][errors]") {
  Parser parser;
  std::vector<std::string_view> argv;
  parser.Feed("PING\r\n*1\r\n$-5\r\nPING\r\n");
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  CHECK(parser.Next(&argv) == Parser::Result::kError);
  CHECK(parser.error() == kInvalidBulk);
  CHECK(argv.empty());
  parser.Feed("*1\r\n$4\r\nPING\r\n");
  CHECK(parser.Next(&argv) == Parser::Result::kError);
  std::memcpy(parser.PrepareWrite(6), "PING\r\n", 6);
  parser.Commit(6);
  CHECK(parser.Next(&argv) == Parser::Result::kError);
  CHECK(parser.error() == kInvalidBulk);
}

TEST_CASE("set_limits applies to the input still to come", "[parser][errors]") {
  Parser parser;
  std::vector<std::string_view> argv;
  parser.Feed("*1\r\n$5\r\nhello\r\n");
  REQUIRE(parser.Next(&argv) == Parser::Result::kCommand);
  ParserLimits limits;
  limits.max_bulk_len = 4;
  parser.set_limits(limits);
  parser.Feed("*1\r\n$5\r\nhello\r\n");
  CHECK(parser.Next(&argv) == Parser::Result::kError);
  CHECK(parser.error() == kInvalidBulk);
}

}  // namespace
}  // namespace cuckood::resp

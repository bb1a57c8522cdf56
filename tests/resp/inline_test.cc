// Inline commands: lines split into args like Redis's sdssplitargs.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "resp/parser.h"
#include "tests/resp/parse_util.h"

namespace cuckood::resp {
namespace {

using testing::Command;
using testing::ErrorOf;
using testing::Outcome;
using testing::ParseBytewise;
using testing::ParseWhole;
using testing::Success;

using namespace std::string_literals;

// The args of a single inline line, checked to parse the same whole and byte by byte.
Command InlineArgs(const std::string& line) {
  const Outcome whole = ParseWhole(line);
  REQUIRE(whole == ParseBytewise(line));
  REQUIRE_FALSE(whole.failed);
  REQUIRE(whole.commands.size() == 1);
  return whole.commands[0];
}

TEST_CASE("Inline lines end at LF, with an optional CR before it", "[parser][inline]") {
  CHECK(ParseWhole("PING\r\nPING\nECHO x\r\n") == Success({{"PING"}, {"PING"}, {"ECHO", "x"}}));
  CHECK(ParseWhole("PING") == Success({}));                 // no LF yet
  CHECK(InlineArgs("GET k\r\r\n") == Command{"GET", "k"});  // one CR stripped, the other a blank
}

TEST_CASE("Blank inline lines produce no command", "[parser][inline]") {
  CHECK(ParseWhole("\r\n\n   \t\r\n\v\f\nPING\n") == Success({{"PING"}}));
}

TEST_CASE("Inline args are separated by spaces and tabs", "[parser][inline]") {
  CHECK(InlineArgs("  SET \t key   value  \n") == Command{"SET", "key", "value"});
  CHECK(InlineArgs("a\rb\n") == Command{"a", "b"});
}

TEST_CASE("Vertical tab and form feed are blanks between args but bytes inside one",
          "[parser][inline]") {
  CHECK(InlineArgs("\va\vb \fc\n") == Command{"a\vb", "c"});
}

TEST_CASE("Double-quoted inline args take escapes", "[parser][inline]") {
  CHECK(InlineArgs("SET \"hello world\"\n") == Command{"SET", "hello world"});
  CHECK(InlineArgs(R"(X "\n\r\t\b\a\\\"")"
                   "\n") == Command{"X", "\n\r\t\b\a\\\""});
  CHECK(InlineArgs(R"(X "\x41\x7a\xFF\x00")"
                   "\n") == Command{"X", "Az\xff\0"s});
  SECTION("an escape that is not one yields the character itself") {
    CHECK(InlineArgs(R"(X "\q\x4\xZZ")"
                     "\n") == Command{"X", "qx4xZZ"});
  }
  SECTION("single quotes inside double quotes are plain") {
    CHECK(InlineArgs(R"(X "it's")"
                     "\n") == Command{"X", "it's"});
  }
}

TEST_CASE("Single-quoted inline args take only the escaped single quote", "[parser][inline]") {
  CHECK(InlineArgs(R"(X 'a b' 'it\'s' 'c\nd' 'say "hi"')"
                   "\n") == Command{"X", "a b", "it's", "c\\nd", "say \"hi\""});
}

TEST_CASE("A quote may open in the middle of an inline arg", "[parser][inline]") {
  CHECK(InlineArgs("foo\"bar baz\" x'y z'\n") == Command{"foobar baz", "xy z"});
}

TEST_CASE("Empty quoted inline args are kept, as in Redis 7", "[parser][inline]") {
  CHECK(InlineArgs("SET k \"\"\n") == Command{"SET", "k", ""});
  CHECK(InlineArgs("'' \"\"\n") == Command{"", ""});
}

TEST_CASE("A closing quote must be followed by a blank or the line's end", "[parser][inline]") {
  CHECK(InlineArgs("X \"a\"\t\"b\"\r\n") == Command{"X", "a", "b"});
  const std::string unbalanced = "ERR Protocol error: unbalanced quotes in request";
  CHECK(ErrorOf("X \"a\"b\n") == unbalanced);
  CHECK(ErrorOf("X 'a'b\n") == unbalanced);
}

TEST_CASE("Unterminated quotes are unbalanced", "[parser][inline]") {
  const std::string unbalanced = "ERR Protocol error: unbalanced quotes in request";
  CHECK(ErrorOf("SET \"a\n") == unbalanced);
  CHECK(ErrorOf("SET 'a\r\n") == unbalanced);
  CHECK(ErrorOf("SET \"a\\\"\n") == unbalanced);  // the escaped quote does not close
  CHECK(ErrorOf("SET \"a\\\n") == unbalanced);    // a backslash at the end escapes nothing
  CHECK(ErrorOf("SET 'a\\'\n") == unbalanced);
  SECTION("commands before the bad line are still returned") {
    CHECK(ParseWhole("PING\nSET \"a\nPING\n") ==
          testing::Failure({{"PING"}}, "ERR Protocol error: unbalanced quotes in request"));
  }
}

TEST_CASE("Inline commands and multibulk commands mix in one stream", "[parser][inline]") {
  CHECK(ParseWhole("PING\r\n*1\r\n$4\r\nPING\r\nECHO \"*1\"\n") ==
        Success({{"PING"}, {"PING"}, {"ECHO", "*1"}}));
}

}  // namespace
}  // namespace cuckood::resp

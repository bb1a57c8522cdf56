// OBJECT ENCODING / REFCOUNT / IDLETIME / FREQ / HELP and TOUCH, as Redis answers them for
// strings and for a module type (a filter is "raw", refcount 1).
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

TEST_CASE("OBJECT ENCODING of strings follows Redis's int/embstr/raw rule", "[object]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "i", "12345"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "neg", "-7"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "lead0", "012"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "e44", std::string(44, 'x')}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "r45", std::string(45, 'x')}) == "+OK\r\n");
  CHECK(ts.Run({"OBJECT", "ENCODING", "i"}) == Bulk("int"));
  CHECK(ts.Run({"OBJECT", "ENCODING", "neg"}) == Bulk("int"));
  CHECK(ts.Run({"OBJECT", "ENCODING", "lead0"}) == Bulk("embstr"));
  CHECK(ts.Run({"OBJECT", "ENCODING", "e44"}) == Bulk("embstr"));
  CHECK(ts.Run({"OBJECT", "ENCODING", "r45"}) == Bulk("raw"));
}

TEST_CASE("OBJECT ENCODING of a filter is raw", "[object]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"OBJECT", "ENCODING", "f"}) == Bulk("raw"));
  CHECK(ts.Run({"OBJECT", "REFCOUNT", "f"}) == ":1\r\n");
}

TEST_CASE("OBJECT REFCOUNT: small integers are shared", "[object]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "small", "9999"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "big", "10000"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "str", "hello"}) == "+OK\r\n");
  CHECK(ts.Run({"OBJECT", "REFCOUNT", "small"}) == ":2147483647\r\n");
  CHECK(ts.Run({"OBJECT", "REFCOUNT", "big"}) == ":1\r\n");
  CHECK(ts.Run({"OBJECT", "REFCOUNT", "str"}) == ":1\r\n");
}

TEST_CASE("OBJECT subcommands on a missing key answer nil", "[object]") {
  TestServer ts;
  CHECK(ts.Run({"OBJECT", "ENCODING", "missing"}) == "$-1\r\n");
  CHECK(ts.Run({"OBJECT", "REFCOUNT", "missing"}) == "$-1\r\n");
  CHECK(ts.Run({"OBJECT", "IDLETIME", "missing"}) == "$-1\r\n");
  CHECK(ts.Run({"OBJECT", "FREQ", "missing"}) == "$-1\r\n");
}

TEST_CASE("OBJECT IDLETIME is 0 and FREQ needs an LFU policy", "[object]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"OBJECT", "IDLETIME", "f"}) == ":0\r\n");
  CHECK(ts.Run({"OBJECT", "FREQ", "f"}) ==
        "-ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please "
        "note that when switching between policies at runtime LRU and LFU data will take some "
        "time to adjust.\r\n");
}

TEST_CASE("OBJECT errors and HELP", "[object]") {
  TestServer ts;
  CHECK(ts.Run({"OBJECT", "COLOR", "k"}) ==
        "-ERR unknown subcommand 'COLOR'. Try OBJECT HELP.\r\n");
  CHECK(ts.Run({"OBJECT", "ENCODING"}) ==
        "-ERR wrong number of arguments for 'object|encoding' command\r\n");
  const std::string help = ts.Run({"OBJECT", "HELP"});
  CHECK(help.rfind("*", 0) == 0);
  CHECK(help.find("+OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n") !=
        std::string::npos);
  CHECK(help.find("+ENCODING <key>\r\n") != std::string::npos);
}

TEST_CASE("TOUCH counts the keys that exist, each time named", "[object]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"TOUCH", "f", "s", "missing", "f"}) == ":3\r\n");
  CHECK(ts.Run({"TOUCH", "missing"}) == ":0\r\n");
  CHECK(ts.Run({"TOUCH"}) == "-ERR wrong number of arguments for 'touch' command\r\n");
}

}  // namespace
}  // namespace cuckood::test

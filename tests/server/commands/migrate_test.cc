// MIGRATE: argument checks, +NOKEY, and real moves between two in-process servers (the target
// is reached over loopback on the port it listens on).
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

TEST_CASE("MIGRATE checks its arguments before connecting", "[migrate]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "k", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "KEYS", "a"}) ==
        "-ERR When using MIGRATE KEYS option, the key argument must be set to the empty "
        "string\r\n");
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "k", "zero", "100"}) ==
        "-ERR value is not an integer or out of range\r\n");
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "k", "0", "soon"}) ==
        "-ERR value is not an integer or out of range\r\n");
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "FAST"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "k", "0", "100", "AUTH"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"GET", "k"}) == Bulk("v"));
}

TEST_CASE("MIGRATE of missing keys answers NOKEY", "[migrate]") {
  TestServer ts;
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "missing", "0", "100"}) == "+NOKEY\r\n");
  CHECK(ts.Run({"MIGRATE", "127.0.0.1", "1", "", "0", "100", "KEYS", "a", "b"}) == "+NOKEY\r\n");
}

TEST_CASE("MIGRATE moves a filter to another server's database", "[migrate]") {
  TestServer source;
  TestServer target;
  const std::string port = std::to_string(target.server().process().port);
  REQUIRE(source.Run({"CF.RESERVE", "f", "100", "BUCKETSIZE", "4"}) == "+OK\r\n");
  REQUIRE(source.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  const std::string info = source.Run({"CF.INFO", "f"});
  SECTION("a move") {
    CHECK(source.Run({"MIGRATE", "127.0.0.1", port, "f", "2", "5000"}) == "+OK\r\n");
    CHECK(source.Run({"EXISTS", "f"}) == ":0\r\n");
    REQUIRE(target.Run({"SELECT", "2"}) == "+OK\r\n");
    CHECK(target.Run({"CF.INFO", "f"}) == info);
    CHECK(target.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  }
  SECTION("COPY keeps the source") {
    CHECK(source.Run({"MIGRATE", "127.0.0.1", port, "f", "0", "5000", "COPY"}) == "+OK\r\n");
    CHECK(source.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
    CHECK(target.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  }
  SECTION("an existing target key needs REPLACE") {
    REQUIRE(target.Run({"SET", "f", "there"}) == "+OK\r\n");
    CHECK(source.Run({"MIGRATE", "127.0.0.1", port, "f", "0", "5000"}) ==
          "-ERR Target instance replied with error: BUSYKEY Target key name already exists.\r\n");
    CHECK(source.Run({"EXISTS", "f"}) == ":1\r\n");
    CHECK(source.Run({"MIGRATE", "127.0.0.1", port, "f", "0", "5000", "REPLACE"}) == "+OK\r\n");
    CHECK(target.Run({"CF.INFO", "f"}) == info);
  }
}

}  // namespace
}  // namespace cuckood::test

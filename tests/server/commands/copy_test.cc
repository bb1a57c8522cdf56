// COPY / MOVE / SWAPDB: filters and strings between keys and databases.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

TEST_CASE("COPY duplicates a filter; the copy is independent", "[copy]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.RESERVE", "src", "100"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "src", "a"}) == ":1\r\n");
  CHECK(ts.Run({"COPY", "src", "dst"}) == ":1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "dst", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.INFO", "dst"}) == ts.Run({"CF.INFO", "src"}));
  REQUIRE(ts.Run({"CF.ADD", "dst", "b"}) == ":1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "src", "b"}) == ":0\r\n");
  CHECK(ts.Run({"CF.DEL", "src", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "dst", "a"}) == ":1\r\n");
}

TEST_CASE("COPY onto an existing key needs REPLACE", "[copy]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "new"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "d", "x"}) == ":1\r\n");
  CHECK(ts.Run({"COPY", "s", "d"}) == ":0\r\n");
  CHECK(ts.Run({"TYPE", "d"}) == "+MBbloomCF\r\n");
  CHECK(ts.Run({"COPY", "s", "d", "REPLACE"}) == ":1\r\n");
  CHECK(ts.Run({"GET", "d"}) == Bulk("new"));
}

TEST_CASE("COPY of a missing key copies nothing", "[copy]") {
  TestServer ts;
  CHECK(ts.Run({"COPY", "missing", "d"}) == ":0\r\n");
  CHECK(ts.Run({"EXISTS", "d"}) == ":0\r\n");
}

TEST_CASE("COPY keeps the source's expiry", "[copy]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v", "EXAT", "4102444800"}) == "+OK\r\n");
  REQUIRE(ts.Run({"COPY", "s", "d"}) == ":1\r\n");
  CHECK(ts.Run({"EXPIRETIME", "d"}) == ":4102444800\r\n");
}

TEST_CASE("COPY DB copies into another database", "[copy]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"COPY", "f", "f", "DB", "3"}) == ":1\r\n");
  CHECK(ts.Run({"COPY", "f", "f", "DB", "3"}) == ":0\r\n");
  CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"SELECT", "3"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"DBSIZE"}) == ":1\r\n");
}

TEST_CASE("COPY argument errors", "[copy]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"COPY", "s", "s"}) == "-ERR source and destination objects are the same\r\n");
  CHECK(ts.Run({"COPY", "s", "s", "DB", "0"}) ==
        "-ERR source and destination objects are the same\r\n");
  CHECK(ts.Run({"COPY", "s", "d", "DB", "16"}) == "-ERR DB index is out of range\r\n");
  CHECK(ts.Run({"COPY", "s", "d", "DB", "x"}) ==
        "-ERR value is not an integer or out of range\r\n");
  CHECK(ts.Run({"COPY", "s", "d", "FOO"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"COPY", "s", "d", "DB"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"COPY", "s"}) == "-ERR wrong number of arguments for 'copy' command\r\n");
  CHECK(ts.Run({"EXISTS", "d"}) == ":0\r\n");
}

TEST_CASE("MOVE moves a key to another database unless it exists there", "[copy]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"MOVE", "f", "2"}) == ":1\r\n");
  CHECK(ts.Run({"EXISTS", "f"}) == ":0\r\n");
  CHECK(ts.Run({"MOVE", "f", "2"}) == ":0\r\n");
  REQUIRE(ts.Run({"SELECT", "2"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  SECTION("a key of that name in the target stays, and so does the source") {
    REQUIRE(ts.Run({"SELECT", "0"}) == "+OK\r\n");
    REQUIRE(ts.Run({"SET", "f", "db0"}) == "+OK\r\n");
    CHECK(ts.Run({"MOVE", "f", "2"}) == ":0\r\n");
    CHECK(ts.Run({"GET", "f"}) == Bulk("db0"));
  }
  SECTION("errors") {
    CHECK(ts.Run({"MOVE", "f", "2"}) == "-ERR source and destination objects are the same\r\n");
    CHECK(ts.Run({"MOVE", "f", "16"}) == "-ERR DB index is out of range\r\n");
    CHECK(ts.Run({"MOVE", "f", "x"}) == "-ERR value is not an integer or out of range\r\n");
    CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  }
}

TEST_CASE("SWAPDB exchanges two databases' contents", "[copy]") {
  TestServer ts;
  auto other = ts.NewClient();
  REQUIRE(ts.Run({"SET", "k", "zero"}) == "+OK\r\n");
  REQUIRE(ts.Run(other, {"SELECT", "1"}) == "+OK\r\n");
  REQUIRE(ts.Run(other, {"CF.ADD", "k", "one"}) == ":1\r\n");
  REQUIRE(ts.Run(other, {"SET", "only1", "x"}) == "+OK\r\n");
  CHECK(ts.Run({"SWAPDB", "0", "1"}) == "+OK\r\n");
  CHECK(ts.Run({"TYPE", "k"}) == "+MBbloomCF\r\n");
  CHECK(ts.Run({"CF.EXISTS", "k", "one"}) == ":1\r\n");
  CHECK(ts.Run({"DBSIZE"}) == ":2\r\n");
  CHECK(ts.Run(other, {"GET", "k"}) == Bulk("zero"));
  CHECK(ts.Run(other, {"DBSIZE"}) == ":1\r\n");
  SECTION("swapping back restores them") {
    CHECK(ts.Run({"SWAPDB", "1", "0"}) == "+OK\r\n");
    CHECK(ts.Run({"GET", "k"}) == Bulk("zero"));
  }
  SECTION("a database swapped with itself is unchanged") {
    CHECK(ts.Run({"SWAPDB", "0", "0"}) == "+OK\r\n");
    CHECK(ts.Run({"TYPE", "k"}) == "+MBbloomCF\r\n");
  }
}

TEST_CASE("SWAPDB argument errors", "[copy]") {
  TestServer ts;
  CHECK(ts.Run({"SWAPDB", "x", "1"}) == "-ERR invalid first DB index\r\n");
  CHECK(ts.Run({"SWAPDB", "0", "y"}) == "-ERR invalid second DB index\r\n");
  CHECK(ts.Run({"SWAPDB", "0", "16"}) == "-ERR DB index is out of range\r\n");
  CHECK(ts.Run({"SWAPDB", "-1", "0"}) == "-ERR DB index is out of range\r\n");
  CHECK(ts.Run({"SWAPDB", "0"}) == "-ERR wrong number of arguments for 'swapdb' command\r\n");
}

TEST_CASE("SWAPDB aborts a transaction watching a key of either database", "[copy]") {
  TestServer ts;
  auto other = ts.NewClient();
  REQUIRE(ts.Run({"SET", "k", "zero"}) == "+OK\r\n");
  REQUIRE(ts.Run({"WATCH", "k"}) == "+OK\r\n");
  REQUIRE(ts.Run(other, {"SWAPDB", "0", "1"}) == "+OK\r\n");
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "mine"}) == "+QUEUED\r\n");
  CHECK(ts.Run({"EXEC"}) == "*-1\r\n");
}

}  // namespace
}  // namespace cuckood::test

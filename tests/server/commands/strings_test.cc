// SET / GET / STRLEN: plain strings next to filters, with Redis's options and errors.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

TEST_CASE("SET then GET returns the value, binary safe", "[strings]") {
  TestServer ts;
  CHECK(ts.Run({"SET", "k", "hello"}) == "+OK\r\n");
  CHECK(ts.Run({"GET", "k"}) == "$5\r\nhello\r\n");
  const std::string binary("a\0b\r\nc", 6);
  CHECK(ts.Run({"SET", "b", binary}) == "+OK\r\n");
  CHECK(ts.Run({"GET", "b"}) == Bulk(binary));
  CHECK(ts.Run({"STRLEN", "b"}) == ":6\r\n");
  CHECK(ts.Run({"SET", "e", ""}) == "+OK\r\n");
  CHECK(ts.Run({"GET", "e"}) == "$0\r\n\r\n");
}

TEST_CASE("GET and STRLEN of a missing key", "[strings]") {
  TestServer ts;
  CHECK(ts.Run({"GET", "missing"}) == "$-1\r\n");
  CHECK(ts.Run({"STRLEN", "missing"}) == ":0\r\n");
  SECTION("RESP3 null") {
    REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
    CHECK(ts.Run({"GET", "missing"}) == "_\r\n");
  }
}

TEST_CASE("GET and STRLEN of a filter are WRONGTYPE", "[strings]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"GET", "f"}) == kWrongType);
  CHECK(ts.Run({"STRLEN", "f"}) == kWrongType);
  CHECK(ts.Run({"SET", "f", "v", "GET"}) == kWrongType);
  CHECK(ts.Run({"TYPE", "f"}) == "+MBbloomCF\r\n");
}

TEST_CASE("SET NX and XX", "[strings]") {
  TestServer ts;
  CHECK(ts.Run({"SET", "k", "1", "XX"}) == "$-1\r\n");
  CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
  CHECK(ts.Run({"SET", "k", "1", "NX"}) == "+OK\r\n");
  CHECK(ts.Run({"SET", "k", "2", "NX"}) == "$-1\r\n");
  CHECK(ts.Run({"GET", "k"}) == Bulk("1"));
  CHECK(ts.Run({"SET", "k", "3", "XX"}) == "+OK\r\n");
  CHECK(ts.Run({"GET", "k"}) == Bulk("3"));
  CHECK(ts.Run({"SET", "k", "4", "NX", "XX"}) == "-ERR syntax error\r\n");
}

TEST_CASE("SET GET answers the old value", "[strings]") {
  TestServer ts;
  CHECK(ts.Run({"SET", "k", "1", "GET"}) == "$-1\r\n");
  CHECK(ts.Run({"SET", "k", "2", "GET"}) == Bulk("1"));
  CHECK(ts.Run({"SET", "k", "3", "NX", "GET"}) == Bulk("2"));
  CHECK(ts.Run({"GET", "k"}) == Bulk("2"));
}

TEST_CASE("SET with an expiry", "[strings]") {
  TestServer ts;
  SECTION("EXAT and PXAT set the absolute time") {
    CHECK(ts.Run({"SET", "k", "v", "EXAT", "4102444800"}) == "+OK\r\n");
    CHECK(ts.Run({"EXPIRETIME", "k"}) == ":4102444800\r\n");
    CHECK(ts.Run({"SET", "k", "v", "PXAT", "4102444800555"}) == "+OK\r\n");
    CHECK(ts.Run({"PEXPIRETIME", "k"}) == ":4102444800555\r\n");
  }
  SECTION("a plain SET drops the expiry, KEEPTTL keeps it") {
    REQUIRE(ts.Run({"SET", "k", "v", "EXAT", "4102444800"}) == "+OK\r\n");
    CHECK(ts.Run({"SET", "k", "w", "KEEPTTL"}) == "+OK\r\n");
    CHECK(ts.Run({"EXPIRETIME", "k"}) == ":4102444800\r\n");
    CHECK(ts.Run({"SET", "k", "x"}) == "+OK\r\n");
    CHECK(ts.Run({"TTL", "k"}) == ":-1\r\n");
  }
  SECTION("EX sets a relative time") {
    CHECK(ts.Run({"SET", "k", "v", "EX", "100"}) == "+OK\r\n");
    const std::string ttl = ts.Run({"TTL", "k"});
    CHECK((ttl == ":100\r\n" || ttl == ":99\r\n"));
  }
  SECTION("bad expiry arguments") {
    CHECK(ts.Run({"SET", "k", "v", "EX", "0"}) == "-ERR invalid expire time in 'set' command\r\n");
    CHECK(ts.Run({"SET", "k", "v", "PX", "-5"}) == "-ERR invalid expire time in 'set' command\r\n");
    CHECK(ts.Run({"SET", "k", "v", "EX", "ten"}) ==
          "-ERR value is not an integer or out of range\r\n");
    CHECK(ts.Run({"SET", "k", "v", "EX"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"SET", "k", "v", "EX", "10", "PX", "10"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"SET", "k", "v", "EX", "10", "KEEPTTL"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"SET", "k", "v", "BOGUS"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
  }
}

TEST_CASE("SET and GET arity", "[strings]") {
  TestServer ts;
  CHECK(ts.Run({"SET", "k"}) == "-ERR wrong number of arguments for 'set' command\r\n");
  CHECK(ts.Run({"GET"}) == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(ts.Run({"GET", "a", "b"}) == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(ts.Run({"STRLEN"}) == "-ERR wrong number of arguments for 'strlen' command\r\n");
}

}  // namespace
}  // namespace cuckood::test

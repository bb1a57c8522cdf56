// MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP and DISK USAGE.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

int64_t IntegerReply(const std::string& reply) {
  REQUIRE(reply.rfind(":", 0) == 0);
  return std::stoll(reply.substr(1));
}

TEST_CASE("MEMORY USAGE of a filter is what Redis with RedisBloom reports", "[memory]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.RESERVE", "cf", "1000"}) == "+OK\r\n");
  // CF.INFO's Size (1080) + the key's sds allocation (8) + the dict entry (24).
  CHECK(ts.Run({"MEMORY", "USAGE", "cf"}) == ":1112\r\n");
  CHECK(ts.Run({"MEMORY", "USAGE", "cf", "SAMPLES", "5"}) == ":1112\r\n");
  SECTION("it grows with the filter") {
    std::vector<std::string> insert = {"CF.INSERT", "cf", "ITEMS"};
    for (int i = 0; i < 3000; ++i) {
      insert.push_back("x" + std::to_string(i));
    }
    REQUIRE(ts.Run(ts.client(), insert).rfind("*3000\r\n", 0) == 0);
    CHECK(IntegerReply(ts.Run({"MEMORY", "USAGE", "cf"})) > 2000);
  }
}

TEST_CASE("MEMORY USAGE of strings grows with the value", "[memory]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "short", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "long", std::string(1000, 'x')}) == "+OK\r\n");
  const int64_t small = IntegerReply(ts.Run({"MEMORY", "USAGE", "short"}));
  const int64_t large = IntegerReply(ts.Run({"MEMORY", "USAGE", "long"}));
  CHECK(small > 0);
  CHECK(large >= small + 1000);
}

TEST_CASE("MEMORY USAGE of a missing key is nil; bad SAMPLES", "[memory]") {
  TestServer ts;
  CHECK(ts.Run({"MEMORY", "USAGE", "missing"}) == "$-1\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"MEMORY", "USAGE", "s", "SAMPLES", "x"}) ==
        "-ERR value is not an integer or out of range\r\n");
  CHECK(ts.Run({"MEMORY", "USAGE", "s", "SAMPLES", "-1"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"MEMORY", "USAGE", "s", "SAMPLES"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"MEMORY", "USAGE", "s", "FOO", "1"}) == "-ERR syntax error\r\n");
}

TEST_CASE("MEMORY STATS is a map of 19 fields", "[memory]") {
  TestServer ts;
  const std::string reply = ts.Run({"MEMORY", "STATS"});
  CHECK(reply.rfind("*38\r\n$14\r\npeak.allocated\r\n:", 0) == 0);
  CHECK(reply.find("$10\r\nkeys.count\r\n:") != std::string::npos);
  SECTION("RESP3 map with doubles") {
    REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
    const std::string r3 = ts.Run({"MEMORY", "STATS"});
    CHECK(r3.rfind("%19\r\n$14\r\npeak.allocated\r\n:", 0) == 0);
    CHECK(r3.find("$13\r\nfragmentation\r\n,") != std::string::npos);
  }
}

TEST_CASE("MEMORY DOCTOR, MALLOC-STATS, PURGE and errors", "[memory]") {
  TestServer ts;
  CHECK(BulkPayload(ts.Run({"MEMORY", "DOCTOR"})).rfind("Hi Sam,", 0) == 0);
  CHECK(ts.Run({"MEMORY", "MALLOC-STATS"}) ==
        Bulk("Stats not supported for the current allocator"));
  CHECK(ts.Run({"MEMORY", "PURGE"}) == "+OK\r\n");
  CHECK(ts.Run({"MEMORY", "FOO"}) == "-ERR unknown subcommand 'FOO'. Try MEMORY HELP.\r\n");
  CHECK(ts.Run({"MEMORY", "USAGE"}) ==
        "-ERR wrong number of arguments for 'memory|usage' command\r\n");
  CHECK(ts.Run({"MEMORY", "HELP"}).find("+USAGE <key> [SAMPLES <count>]\r\n") != std::string::npos);
}

TEST_CASE("DISK USAGE is positive for a key and nil for a missing one", "[memory]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.RESERVE", "f", "10000"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  const int64_t filter = IntegerReply(ts.Run({"DISK", "USAGE", "f"}));
  const int64_t str = IntegerReply(ts.Run({"DISK", "USAGE", "s"}));
  CHECK(filter > 0);
  CHECK(str > 0);
  CHECK(filter > str);
  CHECK(ts.Run({"DISK", "USAGE", "missing"}) == "$-1\r\n");
  CHECK(ts.Run({"DISK", "FOO"}) == "-ERR unknown subcommand 'FOO'. Try DISK HELP.\r\n");
}

}  // namespace
}  // namespace cuckood::test

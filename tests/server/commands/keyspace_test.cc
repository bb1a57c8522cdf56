// The generic key commands: DEL/UNLINK/EXISTS/TYPE, RENAME(NX), the EXPIRE family and TTLs,
// SCAN/KEYS/RANDOMKEY/DBSIZE and FLUSHDB/FLUSHALL, on filters and strings alike.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// A unix time in seconds far in the future (year 2100).
constexpr std::string_view kFarFuture = "4102444800";

TEST_CASE("DEL and UNLINK count only the keys that existed", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"DEL", "s", "missing", "s"}) == ":1\r\n");
  CHECK(ts.Run({"UNLINK", "f", "missing"}) == ":1\r\n");
  CHECK(ts.Run({"DEL", "f"}) == ":0\r\n");
  CHECK(ts.Run({"DEL"}) == "-ERR wrong number of arguments for 'del' command\r\n");
  CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == ":0\r\n");
}

TEST_CASE("EXISTS counts a key as often as it is named", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"EXISTS", "f", "f", "missing", "s"}) == ":3\r\n");
  CHECK(ts.Run({"EXISTS", "missing"}) == ":0\r\n");
}

TEST_CASE("TYPE names strings, cuckoo filters and missing keys", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.RESERVE", "f", "100"}) == "+OK\r\n");
  CHECK(ts.Run({"TYPE", "s"}) == "+string\r\n");
  CHECK(ts.Run({"TYPE", "f"}) == "+MBbloomCF\r\n");
  CHECK(ts.Run({"TYPE", "missing"}) == "+none\r\n");
  SECTION("SET over a filter makes it a string") {
    CHECK(ts.Run({"SET", "f", "now-a-string"}) == "+OK\r\n");
    CHECK(ts.Run({"TYPE", "f"}) == "+string\r\n");
  }
}

TEST_CASE("RENAME moves a filter with its contents", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "a", "x"}) == ":1\r\n");
  CHECK(ts.Run({"RENAME", "a", "b"}) == "+OK\r\n");
  CHECK(ts.Run({"EXISTS", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.EXISTS", "b", "x"}) == ":1\r\n");
  SECTION("onto an existing key it replaces it, whatever its type") {
    REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
    CHECK(ts.Run({"RENAME", "b", "s"}) == "+OK\r\n");
    CHECK(ts.Run({"TYPE", "s"}) == "+MBbloomCF\r\n");
  }
  SECTION("a key renamed to itself stays") {
    CHECK(ts.Run({"RENAME", "b", "b"}) == "+OK\r\n");
    CHECK(ts.Run({"CF.EXISTS", "b", "x"}) == ":1\r\n");
  }
  SECTION("a missing source is no such key") {
    CHECK(ts.Run({"RENAME", "missing", "c"}) == "-ERR no such key\r\n");
    CHECK(ts.Run({"RENAMENX", "missing", "c"}) == "-ERR no such key\r\n");
  }
}

TEST_CASE("RENAMENX renames only onto a missing key", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "a", "1"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "b", "2"}) == "+OK\r\n");
  CHECK(ts.Run({"RENAMENX", "a", "b"}) == ":0\r\n");
  CHECK(ts.Run({"GET", "b"}) == Bulk("2"));
  CHECK(ts.Run({"RENAMENX", "a", "c"}) == ":1\r\n");
  CHECK(ts.Run({"GET", "c"}) == Bulk("1"));
  CHECK(ts.Run({"EXISTS", "a"}) == ":0\r\n");
}

TEST_CASE("TTL, PTTL and EXPIRETIME: -2 for a missing key, -1 without expiry", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"TTL", "missing"}) == ":-2\r\n");
  CHECK(ts.Run({"PTTL", "missing"}) == ":-2\r\n");
  CHECK(ts.Run({"EXPIRETIME", "missing"}) == ":-2\r\n");
  CHECK(ts.Run({"TTL", "f"}) == ":-1\r\n");
  CHECK(ts.Run({"PEXPIRETIME", "f"}) == ":-1\r\n");
}

TEST_CASE("EXPIREAT sets an absolute expiry that EXPIRETIME reads back", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  CHECK(ts.Run({"EXPIREAT", "f", kFarFuture}) == ":1\r\n");
  CHECK(ts.Run({"EXPIRETIME", "f"}) == ":4102444800\r\n");
  CHECK(ts.Run({"PEXPIRETIME", "f"}) == ":4102444800000\r\n");
  CHECK(ts.Run({"PEXPIREAT", "f", "4102444800123"}) == ":1\r\n");
  CHECK(ts.Run({"PEXPIRETIME", "f"}) == ":4102444800123\r\n");
  CHECK(ts.Run({"EXPIRETIME", "f"}) == ":4102444800\r\n");
  SECTION("PERSIST removes it once") {
    CHECK(ts.Run({"PERSIST", "f"}) == ":1\r\n");
    CHECK(ts.Run({"PERSIST", "f"}) == ":0\r\n");
    CHECK(ts.Run({"TTL", "f"}) == ":-1\r\n");
  }
  SECTION("the filter still answers") {
    CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
  }
}

TEST_CASE("EXPIRE with a relative time gives a TTL no larger than asked", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"EXPIRE", "s", "100"}) == ":1\r\n");
  const std::string ttl = ts.Run({"TTL", "s"});
  CHECK((ttl == ":100\r\n" || ttl == ":99\r\n"));
  CHECK(ts.Run({"EXPIRE", "missing", "100"}) == ":0\r\n");
}

TEST_CASE("EXPIRE in the past deletes the key at once", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"EXPIRE", "f", "-1"}) == ":1\r\n");
  CHECK(ts.Run({"EXISTS", "f"}) == ":0\r\n");
  CHECK(ts.Run({"EXPIREAT", "s", "1"}) == ":1\r\n");
  CHECK(ts.Run({"GET", "s"}) == "$-1\r\n");
}

TEST_CASE("EXPIRE NX, XX, GT and LT conditions", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  SECTION("without an expiry: XX and GT do nothing, NX and LT set it") {
    CHECK(ts.Run({"EXPIREAT", "s", kFarFuture, "XX"}) == ":0\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", kFarFuture, "GT"}) == ":0\r\n");
    CHECK(ts.Run({"TTL", "s"}) == ":-1\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", kFarFuture, "LT"}) == ":1\r\n");
    CHECK(ts.Run({"EXPIRETIME", "s"}) == ":4102444800\r\n");
  }
  SECTION("with an expiry: NX does nothing, GT only later, LT only earlier") {
    REQUIRE(ts.Run({"EXPIREAT", "s", kFarFuture, "NX"}) == ":1\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", "4102444900", "NX"}) == ":0\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", "4102444700", "GT"}) == ":0\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", "4102444900", "GT"}) == ":1\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", "4102444950", "LT"}) == ":0\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", "4102444850", "LT"}) == ":1\r\n");
    CHECK(ts.Run({"EXPIRETIME", "s"}) == ":4102444850\r\n");
    CHECK(ts.Run({"EXPIREAT", "s", "4102444850", "XX"}) == ":1\r\n");
  }
  SECTION("incompatible or unknown options and bad times") {
    CHECK(ts.Run({"EXPIRE", "s", "10", "NX", "XX"}) ==
          "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n");
    CHECK(ts.Run({"EXPIRE", "s", "10", "GT", "LT"}) ==
          "-ERR GT and LT options at the same time are not compatible\r\n");
    CHECK(ts.Run({"EXPIRE", "s", "10", "FOO"}) == "-ERR Unsupported option FOO\r\n");
    CHECK(ts.Run({"EXPIRE", "s", "abc"}) == "-ERR value is not an integer or out of range\r\n");
    CHECK(ts.Run({"EXPIRE", "s", "9223372036854775807"}) ==
          "-ERR invalid expire time in 'expire' command\r\n");
    CHECK(ts.Run({"TTL", "s"}) == ":-1\r\n");
  }
}

TEST_CASE("KEYS matches glob patterns over strings and filters", "[keyspace]") {
  TestServer ts;
  for (std::string_view k : {"user:1", "user:2", "item:1"}) {
    REQUIRE(ts.Run({"SET", k, "v"}) == "+OK\r\n");
  }
  REQUIRE(ts.Run({"CF.ADD", "user:cf", "a"}) == ":1\r\n");
  CHECK(Sorted(BulkArray(ts.Run({"KEYS", "*"}))) ==
        std::vector<std::string>{"item:1", "user:1", "user:2", "user:cf"});
  CHECK(Sorted(BulkArray(ts.Run({"KEYS", "user:?"}))) ==
        std::vector<std::string>{"user:1", "user:2"});
  CHECK(Sorted(BulkArray(ts.Run({"KEYS", "*:[1c]*"}))) ==
        std::vector<std::string>{"item:1", "user:1", "user:cf"});
  CHECK(ts.Run({"KEYS", "nomatch*"}) == "*0\r\n");
}

TEST_CASE("SCAN walks every key once and filters by MATCH and TYPE", "[keyspace]") {
  TestServer ts;
  std::vector<std::string> all;
  for (int i = 0; i < 25; ++i) {
    all.push_back("k" + std::to_string(i));
    REQUIRE(ts.Run({"SET", all.back(), "v"}) == "+OK\r\n");
  }
  REQUIRE(ts.Run({"CF.ADD", "filter", "a"}) == ":1\r\n");
  all.push_back("filter");
  SECTION("a full walk with COUNT 7 returns every key") {
    std::vector<std::string> seen;
    std::string cursor = "0";
    int pages = 0;
    do {
      const std::string reply =
          ts.Run(ts.client(), std::vector<std::string>{"SCAN", cursor, "COUNT", "7"});
      REQUIRE(reply.rfind("*2\r\n$", 0) == 0);
      const size_t eol = reply.find("\r\n", 4);
      const size_t len = std::stoul(reply.substr(5, eol - 5));
      cursor = reply.substr(eol + 2, len);
      auto keys = BulkArray(reply.substr(eol + 2 + len + 2));
      seen.insert(seen.end(), keys.begin(), keys.end());
      ++pages;
    } while (cursor != "0" && pages < 100);
    CHECK(cursor == "0");
    CHECK(pages >= 2);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    CHECK(seen == Sorted(all));
  }
  SECTION("TYPE MBbloomCF finds the filter only") {
    std::vector<std::string> seen;
    std::string cursor = "0";
    int pages = 0;
    do {
      const std::string reply =
          ts.Run(ts.client(),
                 std::vector<std::string>{"SCAN", cursor, "TYPE", "MBbloomCF", "COUNT", "100"});
      const size_t eol = reply.find("\r\n", 4);
      const size_t len = std::stoul(reply.substr(5, eol - 5));
      cursor = reply.substr(eol + 2, len);
      auto keys = BulkArray(reply.substr(eol + 2 + len + 2));
      seen.insert(seen.end(), keys.begin(), keys.end());
    } while (cursor != "0" && ++pages < 100);
    CHECK(seen == std::vector<std::string>{"filter"});
  }
  SECTION("bad arguments") {
    CHECK(ts.Run({"SCAN", "abc"}) == "-ERR invalid cursor\r\n");
    CHECK(ts.Run({"SCAN", "0", "COUNT", "0"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"SCAN", "0", "COUNT", "x"}) ==
          "-ERR value is not an integer or out of range\r\n");
    CHECK(ts.Run({"SCAN", "0", "MATCH"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"SCAN", "0", "FOO", "1"}) == "-ERR syntax error\r\n");
  }
}

TEST_CASE("DBSIZE and RANDOMKEY", "[keyspace]") {
  TestServer ts;
  CHECK(ts.Run({"DBSIZE"}) == ":0\r\n");
  CHECK(ts.Run({"RANDOMKEY"}) == "$-1\r\n");
  REQUIRE(ts.Run({"CF.ADD", "only", "a"}) == ":1\r\n");
  CHECK(ts.Run({"DBSIZE"}) == ":1\r\n");
  CHECK(ts.Run({"RANDOMKEY"}) == Bulk("only"));
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"DBSIZE"}) == ":2\r\n");
}

TEST_CASE("FLUSHDB empties the selected database only; FLUSHALL every one", "[keyspace]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "a", "0"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SELECT", "1"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "b", "x"}) == ":1\r\n");
  SECTION("FLUSHDB") {
    CHECK(ts.Run({"FLUSHDB"}) == "+OK\r\n");
    CHECK(ts.Run({"DBSIZE"}) == ":0\r\n");
    REQUIRE(ts.Run({"SELECT", "0"}) == "+OK\r\n");
    CHECK(ts.Run({"GET", "a"}) == Bulk("0"));
  }
  SECTION("FLUSHALL, also with ASYNC and SYNC") {
    for (std::string_view mode : {"", "ASYNC", "SYNC"}) {
      REQUIRE(ts.Run({"SELECT", "0"}) == "+OK\r\n");
      REQUIRE(ts.Run({"SET", "a", "0"}) == "+OK\r\n");
      CHECK((mode.empty() ? ts.Run({"FLUSHALL"}) : ts.Run({"FLUSHALL", mode})) == "+OK\r\n");
      CHECK(ts.Run({"DBSIZE"}) == ":0\r\n");
      REQUIRE(ts.Run({"SELECT", "1"}) == "+OK\r\n");
      CHECK(ts.Run({"DBSIZE"}) == ":0\r\n");
    }
  }
  SECTION("an unknown mode is a syntax error") {
    CHECK(ts.Run({"FLUSHDB", "NOW"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"DBSIZE"}) == ":1\r\n");
  }
}

}  // namespace
}  // namespace cuckood::test

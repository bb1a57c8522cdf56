// DUMP / RESTORE: Redis 7.0's payloads with RedisBloom's filter encoding. The payload bytes and
// the replies they lead to were recorded from Redis 7.0.15 with RedisBloom 2.8.20
// (/work/shared/goldens/cf-dump.jsonl, scenario dump/s1/1).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

// DUMP of a filter (bucket size 4, 2 buckets, expansion 0, max iterations 1, four items
// inserted and four deleted).
const std::string kFilterPayload = Bytes(
    "\x07\x81\x30\x16\xe5\xa2\x89\x82\x14\x04\x02\x01\x02\x02\x02\x04\x02\x04\x02\x04\x02\x01\x02"
    "\x00\x02\x02\x05\x08\x07\x36\xe4\x00\x00\x00\xf5\x00\x00\x0a\x00\xd5\x12\x96\x9b\x90\xdd\x00"
    "\xec");
// DUMP of the string "plain value".
const std::string kStringPayload =
    Bytes("\x00\x0bplain value\x0a\x00\x21\x4c\xb8\x64\xd2\x0e\xc2\xff");

const std::string kRestoredInfo =
    "*16\r\n+Size\r\n:64\r\n+Number of buckets\r\n:2\r\n+Number of filters\r\n:1\r\n"
    "+Number of items inserted\r\n:4\r\n+Number of items deleted\r\n:4\r\n+Bucket size\r\n:4\r\n"
    "+Expansion rate\r\n:0\r\n+Max iterations\r\n:1\r\n";

TEST_CASE("DUMP of a string is Redis's payload", "[dump]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "plain value"}) == "+OK\r\n");
  CHECK(ts.Run({"DUMP", "s"}) == Bulk(kStringPayload));
  CHECK(ts.Run({"RESTORE", "s2", "0", kStringPayload}) == "+OK\r\n");
  CHECK(ts.Run({"GET", "s2"}) == Bulk("plain value"));
  CHECK(ts.Run({"TYPE", "s2"}) == "+string\r\n");
}

TEST_CASE("DUMP of a missing key is nil", "[dump]") {
  TestServer ts;
  CHECK(ts.Run({"DUMP", "missing"}) == "$-1\r\n");
}

TEST_CASE("RESTORE of a recorded RedisBloom payload gives the same filter", "[dump]") {
  TestServer ts;
  CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload}) == "+OK\r\n");
  CHECK(ts.Run({"TYPE", "f"}) == "+MBbloomCF\r\n");
  CHECK(ts.Run({"CF.INFO", "f"}) == kRestoredInfo);
  CHECK(ts.Run({"CF.SCANDUMP", "f", "0"}) ==
        Bytes("*2\r\n:1\r\n$38\r\n"
              "\x04\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00"
              "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x01\x00\x00\x00"
              "\r\n"));
  CHECK(ts.Run({"CF.SCANDUMP", "f", "1"}) ==
        Bytes("*2\r\n:9\r\n$8\r\n\x07\x36\xe4\x00\x00\x00\xf5\x00\r\n"));
  CHECK(ts.Run({"CF.SCANDUMP", "f", "9"}) == "*2\r\n:0\r\n$-1\r\n");
  SECTION("and DUMP gives the payload back byte for byte") {
    CHECK(ts.Run({"DUMP", "f"}) == Bulk(kFilterPayload));
  }
}

TEST_CASE("RESTORE onto an existing key needs REPLACE", "[dump]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "f", "v"}) == "+OK\r\n");
  CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload}) ==
        "-BUSYKEY Target key name already exists.\r\n");
  CHECK(ts.Run({"TYPE", "f"}) == "+string\r\n");
  CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload, "REPLACE"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.INFO", "f"}) == kRestoredInfo);
}

TEST_CASE("DUMP then RESTORE round-trips a grown filter", "[dump]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.RESERVE", "src", "50", "BUCKETSIZE", "2", "EXPANSION", "2"}) == "+OK\r\n");
  std::vector<std::string> insert = {"CF.INSERT", "src", "ITEMS"};
  for (int i = 0; i < 200; ++i) {
    insert.push_back("item-" + std::to_string(i));
  }
  REQUIRE(ts.Run(ts.client(), insert).rfind("*200\r\n", 0) == 0);
  REQUIRE(ts.Run({"CF.DEL", "src", "item-7"}) == ":1\r\n");
  const std::string payload = BulkPayload(ts.Run({"DUMP", "src"}));
  CHECK(ts.Run({"RESTORE", "dst", "0", payload}) == "+OK\r\n");
  CHECK(ts.Run({"CF.INFO", "dst"}) == ts.Run({"CF.INFO", "src"}));
  // Every SCANDUMP chunk is the same.
  std::string iter = "0";
  for (int guard = 0; guard < 1000; ++guard) {
    const std::string a = ts.Run(ts.client(), std::vector<std::string>{"CF.SCANDUMP", "src", iter});
    const std::string b = ts.Run(ts.client(), std::vector<std::string>{"CF.SCANDUMP", "dst", iter});
    REQUIRE(a == b);
    const size_t eol = a.find("\r\n", 5);
    iter = a.substr(5, eol - 5);
    if (iter == "0") {
      break;
    }
  }
  CHECK(iter == "0");
  CHECK(ts.Run({"DUMP", "dst"}) == Bulk(payload));
}

TEST_CASE("RESTORE refuses damaged payloads and creates nothing", "[dump]") {
  TestServer ts;
  SECTION("a changed byte fails the checksum") {
    std::string bad = kFilterPayload;
    bad[12] = static_cast<char>(bad[12] ^ 0x40);
    CHECK(ts.Run({"RESTORE", "f", "0", bad}) ==
          "-ERR DUMP payload version or checksum are wrong\r\n");
  }
  SECTION("a truncated payload") {
    CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload.substr(0, 20)}) ==
          "-ERR DUMP payload version or checksum are wrong\r\n");
  }
  SECTION("a newer RDB version") {
    std::string bad = kFilterPayload;
    bad[bad.size() - 10] = 0x0b;  // the version after the value: 10 -> 11
    CHECK(ts.Run({"RESTORE", "f", "0", bad}) ==
          "-ERR DUMP payload version or checksum are wrong\r\n");
  }
  SECTION("an empty payload") {
    CHECK(ts.Run({"RESTORE", "f", "0", ""}) ==
          "-ERR DUMP payload version or checksum are wrong\r\n");
  }
  CHECK(ts.Run({"EXISTS", "f"}) == ":0\r\n");
}

TEST_CASE("RESTORE TTL and options", "[dump]") {
  TestServer ts;
  SECTION("ABSTTL takes the TTL as a unix time in milliseconds") {
    CHECK(ts.Run({"RESTORE", "f", "4102444800000", kFilterPayload, "ABSTTL"}) == "+OK\r\n");
    CHECK(ts.Run({"PEXPIRETIME", "f"}) == ":4102444800000\r\n");
  }
  SECTION("a relative TTL") {
    CHECK(ts.Run({"RESTORE", "f", "100000", kFilterPayload}) == "+OK\r\n");
    const std::string ttl = ts.Run({"TTL", "f"});
    CHECK((ttl == ":100\r\n" || ttl == ":99\r\n"));
  }
  SECTION("TTL 0 is no expiry; IDLETIME and FREQ are accepted") {
    CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload, "IDLETIME", "10"}) == "+OK\r\n");
    CHECK(ts.Run({"TTL", "f"}) == ":-1\r\n");
    CHECK(ts.Run({"RESTORE", "g", "0", kFilterPayload, "FREQ", "5"}) == "+OK\r\n");
  }
  SECTION("bad values") {
    CHECK(ts.Run({"RESTORE", "f", "-1", kFilterPayload}) ==
          "-ERR Invalid TTL value, must be >= 0\r\n");
    CHECK(ts.Run({"RESTORE", "f", "x", kFilterPayload}) ==
          "-ERR value is not an integer or out of range\r\n");
    CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload, "IDLETIME", "-1"}) ==
          "-ERR Invalid IDLETIME value, must be >= 0\r\n");
    CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload, "FREQ", "256"}) ==
          "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n");
    CHECK(ts.Run({"RESTORE", "f", "0", kFilterPayload, "BOGUS"}) == "-ERR syntax error\r\n");
    CHECK(ts.Run({"EXISTS", "f"}) == ":0\r\n");
  }
}

}  // namespace
}  // namespace cuckood::test

// CF.* through the dispatcher: RedisBloom 2.8's reply texts and shapes (the goldens recorded from
// RedisBloom 2.8.20, /work/shared/goldens/cf-errors.jsonl, and redisbloom-cf-reference.md §1).
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

// CF.INFO's eight fields in RESP2 (an array of name, value pairs).
std::string Info2(int64_t size, int64_t buckets, int64_t filters, int64_t inserted, int64_t deleted,
                  int64_t bucket_size, int64_t expansion, int64_t iterations) {
  return "*16\r\n+Size\r\n" + Int(size) + "+Number of buckets\r\n" + Int(buckets) +
         "+Number of filters\r\n" + Int(filters) + "+Number of items inserted\r\n" + Int(inserted) +
         "+Number of items deleted\r\n" + Int(deleted) + "+Bucket size\r\n" + Int(bucket_size) +
         "+Expansion rate\r\n" + Int(expansion) + "+Max iterations\r\n" + Int(iterations);
}

TEST_CASE("CF.RESERVE creates a filter once; a second one answers item exists", "[cf]") {
  TestServer ts;
  CHECK(ts.Run({"CF.RESERVE", "k", "100"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.RESERVE", "k", "100"}) == "-ERR item exists\r\n");
  CHECK(ts.Run({"TYPE", "k"}) == "+MBbloomCF\r\n");
  CHECK(ts.Run({"CF.INFO", "k"}) == Info2(184, 64, 1, 0, 0, 2, 1, 20));
}

TEST_CASE("CF.RESERVE validates its arguments in RedisBloom's order", "[cf]") {
  TestServer ts;
  SECTION("an even argument count is an arity error") {
    CHECK(ts.Run({"CF.RESERVE", "k"}) ==
          "-ERR wrong number of arguments for 'cf.reserve' command\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k", "100", "BUCKETSIZE"}) ==
          "-ERR wrong number of arguments for 'cf.reserve' command\r\n");
  }
  SECTION("a capacity that is not a plain decimal integer is Bad capacity") {
    for (std::string_view cap :
         {"abc", "", "1.5", "1e3", "0x10", "+10", "010", "-0", " 10", "9223372036854775808"}) {
      INFO("capacity '" << cap << "'");
      CHECK(ts.Run({"CF.RESERVE", "k", cap}) == "-Bad capacity\r\n");
    }
  }
  SECTION("capacity below twice the bucket size is refused; exactly twice is accepted") {
    CHECK(ts.Run({"CF.RESERVE", "k1", "3"}) == "-Capacity must be at least (BucketSize * 2)\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k2", "7", "BUCKETSIZE", "4"}) ==
          "-Capacity must be at least (BucketSize * 2)\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k3", "8", "BUCKETSIZE", "4"}) == "+OK\r\n");
    CHECK(ts.Run({"CF.INFO", "k3"}) == Info2(64, 2, 1, 0, 0, 4, 1, 20));
  }
  SECTION("options out of range name their inclusive bounds") {
    CHECK(ts.Run({"CF.RESERVE", "k", "1000", "BUCKETSIZE", "0"}) ==
          "-BUCKETSIZE: value must be an integer between 1 and 255, inclusive.\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k", "1000", "MAXITERATIONS", "65536"}) ==
          "-MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k", "1000", "EXPANSION", "-1"}) ==
          "-EXPANSION: value must be an integer between 0 and 32768, inclusive.\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k", "1000", "MAXITERATIONS", "abc"}) ==
          "-Couldn't parse MAXITERATIONS\r\n");
    CHECK(ts.Run({"CF.RESERVE", "k", "1000", "BUCKETSIZE", "1.5"}) ==
          "-Couldn't parse BUCKETSIZE\r\n");
    CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
  }
  SECTION("the options in any order and case are applied") {
    CHECK(ts.Run({"CF.RESERVE", "k", "1000", "maxiterations", "65535", "EXPANSION", "32768"}) ==
          "+OK\r\n");
    CHECK(ts.Run({"CF.INFO", "k"}) == Info2(1080, 512, 1, 0, 0, 2, 32768, 65535));
  }
  SECTION("a capacity too large for memory is refused") {
    CHECK(ts.Run({"CF.RESERVE", "k", "9223372036854775807"}) ==
          "-ERR Insufficient memory to create filter\r\n");
  }
  SECTION("on a string key it is WRONGTYPE") {
    CHECK(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
    CHECK(ts.Run({"CF.RESERVE", "s", "100"}) == kWrongType);
  }
}

TEST_CASE("CF.ADD creates a default filter and counts duplicates", "[cf]") {
  TestServer ts;
  CHECK(ts.Run({"CF.ADD", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.ADD", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.COUNT", "k", "a"}) == ":2\r\n");
  CHECK(ts.Run({"CF.EXISTS", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "k", "b"}) == ":0\r\n");
  CHECK(ts.Run({"CF.INFO", "k"}) == Info2(1080, 512, 1, 2, 0, 2, 1, 20));
}

TEST_CASE("CF.ADDNX adds only an item not already present", "[cf]") {
  TestServer ts;
  CHECK(ts.Run({"CF.ADDNX", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.ADDNX", "k", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.COUNT", "k", "a"}) == ":1\r\n");
  SECTION("an empty item is an item like any other") {
    CHECK(ts.Run({"CF.ADDNX", "k", ""}) == ":1\r\n");
    CHECK(ts.Run({"CF.ADDNX", "k", ""}) == ":0\r\n");
  }
}

TEST_CASE("CF commands check their arity with the lower-case command name", "[cf]") {
  TestServer ts;
  SECTION("too few") {
    CHECK(ts.Run({"CF.ADD", "k"}) == "-ERR wrong number of arguments for 'cf.add' command\r\n");
    CHECK(ts.Run({"cf.Exists"}) == "-ERR wrong number of arguments for 'cf.exists' command\r\n");
    CHECK(ts.Run({"CF.MEXISTS", "k"}) ==
          "-ERR wrong number of arguments for 'cf.mexists' command\r\n");
    CHECK(ts.Run({"CF.INFO"}) == "-ERR wrong number of arguments for 'cf.info' command\r\n");
    CHECK(ts.Run({"CF.SCANDUMP", "k"}) ==
          "-ERR wrong number of arguments for 'cf.scandump' command\r\n");
  }
  SECTION("too many") {
    CHECK(ts.Run({"CF.ADD", "k", "a", "b"}) ==
          "-ERR wrong number of arguments for 'cf.add' command\r\n");
    CHECK(ts.Run({"CF.DEL", "k", "a", "b"}) ==
          "-ERR wrong number of arguments for 'cf.del' command\r\n");
    CHECK(ts.Run({"CF.SCANDUMP", "k", "0", "1"}) ==
          "-ERR wrong number of arguments for 'cf.scandump' command\r\n");
  }
  CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
}

TEST_CASE("CF commands on a string key", "[cf]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  SECTION("writes and CF.INFO are WRONGTYPE") {
    CHECK(ts.Run({"CF.ADD", "s", "a"}) == kWrongType);
    CHECK(ts.Run({"CF.ADDNX", "s", "a"}) == kWrongType);
    CHECK(ts.Run({"CF.INSERT", "s", "ITEMS", "a"}) == kWrongType);
    CHECK(ts.Run({"CF.INFO", "s"}) == kWrongType);
  }
  SECTION("lookups answer not present, as RedisBloom does") {
    CHECK(ts.Run({"CF.EXISTS", "s", "a"}) == ":0\r\n");
    CHECK(ts.Run({"CF.COUNT", "s", "a"}) == ":0\r\n");
  }
  SECTION("CF.DEL answers Not found") {
    CHECK(ts.Run({"CF.DEL", "s", "a"}) == "-Not found\r\n");
  }
  CHECK(ts.Run({"GET", "s"}) == Bulk("v"));
}

TEST_CASE("CF lookups and CF.DEL on a missing key", "[cf]") {
  TestServer ts;
  CHECK(ts.Run({"CF.EXISTS", "nokey", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.MEXISTS", "nokey", "a", "b", ""}) == "*3\r\n:0\r\n:0\r\n:0\r\n");
  CHECK(ts.Run({"CF.COUNT", "nokey", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.DEL", "nokey", "a"}) == "-Not found\r\n");
  CHECK(ts.Run({"CF.INFO", "nokey"}) == "-ERR not found\r\n");
  CHECK(ts.Run({"CF.SCANDUMP", "nokey", "0"}) == "-ERR not found\r\n");
  CHECK(ts.Run({"EXISTS", "nokey"}) == ":0\r\n");
}

TEST_CASE("CF.DEL removes one copy at a time and is counted in CF.INFO", "[cf]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.RESERVE", "k", "100"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.DEL", "k", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.ADD", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.ADD", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.DEL", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.COUNT", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.DEL", "k", "a"}) == ":1\r\n");
  CHECK(ts.Run({"CF.COUNT", "k", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.DEL", "k", "a"}) == ":0\r\n");
  CHECK(ts.Run({"CF.INFO", "k"}) == Info2(184, 64, 1, 0, 2, 2, 1, 20));
}

TEST_CASE("CF.MEXISTS answers one integer per item, in order", "[cf]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "k", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"CF.ADD", "k", ""}) == ":1\r\n");
  CHECK(ts.Run({"CF.MEXISTS", "k", "a", "", "nope", "a"}) == "*4\r\n:1\r\n:1\r\n:0\r\n:1\r\n");
}

TEST_CASE("CF.INSERT parses CAPACITY, NOCREATE and ITEMS", "[cf]") {
  TestServer ts;
  SECTION("without ITEMS' items it is an arity error") {
    CHECK(ts.Run({"CF.INSERT", "k", "ITEMS"}) ==
          "-ERR wrong number of arguments for 'cf.insert' command\r\n");
    CHECK(ts.Run({"CF.INSERT", "k", "CAPACITY", "100"}) ==
          "-ERR wrong number of arguments for 'cf.insert' command\r\n");
  }
  SECTION("an unknown word before ITEMS is refused and creates nothing") {
    CHECK(ts.Run({"CF.INSERT", "k", "FOO", "ITEMS", "a"}) == "-Unknown argument received\r\n");
    CHECK(ts.Run({"TYPE", "k"}) == "+none\r\n");
  }
  SECTION("a bad or small CAPACITY") {
    CHECK(ts.Run({"CF.INSERT", "k", "CAPACITY", "abc", "ITEMS", "a"}) == "-Bad capacity\r\n");
    CHECK(ts.Run({"CF.INSERT", "k", "CAPACITY", "3", "ITEMS", "a"}) ==
          "-Capacity must be at least (BucketSize * 2)\r\n");
  }
  SECTION("NOCREATE on a missing key is not found and creates nothing") {
    CHECK(ts.Run({"CF.INSERT", "k", "NOCREATE", "ITEMS", "a"}) == "-ERR not found\r\n");
    CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
  }
  SECTION("with CAPACITY a new filter gets that capacity; every item is added") {
    CHECK(ts.Run({"CF.INSERT", "k", "CAPACITY", "100", "ITEMS", "a", "b", "a"}) ==
          "*3\r\n:1\r\n:1\r\n:1\r\n");
    CHECK(ts.Run({"CF.INFO", "k"}) == Info2(184, 64, 1, 3, 0, 2, 1, 20));
  }
  SECTION("on an existing filter CAPACITY is ignored") {
    REQUIRE(ts.Run({"CF.RESERVE", "k", "64"}) == "+OK\r\n");
    CHECK(ts.Run({"CF.INSERT", "k", "CAPACITY", "9223372036854775807", "ITEMS", "a"}) ==
          "*1\r\n:1\r\n");
    CHECK(ts.Run({"CF.INSERT", "k", "NOCREATE", "ITEMS", "b", "c"}) == "*2\r\n:1\r\n:1\r\n");
  }
}

TEST_CASE("CF.INSERTNX answers 1 added, 0 present", "[cf]") {
  TestServer ts;
  CHECK(ts.Run({"CF.INSERTNX", "k", "ITEMS", "a", "a", "b", "", "a"}) ==
        "*5\r\n:1\r\n:0\r\n:1\r\n:1\r\n:0\r\n");
}

TEST_CASE("A full filter without expansion answers Filter is full", "[cf]") {
  TestServer ts;
  // Capacity 3 with bucket size 1: 4 buckets (a power of two), so 4 items fit and no more.
  REQUIRE(ts.Run({"CF.RESERVE", "f", "3", "BUCKETSIZE", "1", "EXPANSION", "0"}) == "+OK\r\n");
  for (std::string item : {"f0", "f1", "f2", "f3"}) {
    CHECK(ts.Run({"CF.ADD", "f", item}) == ":1\r\n");
  }
  CHECK(ts.Run({"CF.ADD", "f", "f4"}) == "-Filter is full\r\n");
  CHECK(ts.Run({"CF.ADDNX", "f", "f0"}) == ":0\r\n");
  CHECK(ts.Run({"CF.ADDNX", "f", "new-item"}) == "-Filter is full\r\n");
  SECTION("CF.INSERT answers -1 for each item it could not add") {
    CHECK(ts.Run({"CF.INSERT", "f", "ITEMS", "n1", "f0", "n2"}) == "*3\r\n:-1\r\n:-1\r\n:-1\r\n");
    CHECK(ts.Run({"CF.INSERTNX", "f", "ITEMS", "n1", "f0", "n2"}) == "*3\r\n:-1\r\n:0\r\n:-1\r\n");
  }
  CHECK(ts.Run({"CF.INFO", "f"}) == Info2(60, 4, 1, 4, 0, 1, 0, 20));
}

TEST_CASE("CF.SCANDUMP position must be a plain integer", "[cf]") {
  TestServer ts;
  for (std::string_view pos : {"abc", "", "1.5", "-0", "+10", "99999999999999999999"}) {
    INFO("position '" << pos << "'");
    CHECK(ts.Run({"CF.SCANDUMP", "k", pos}) == "-Invalid position\r\n");
  }
}

// Splits a "*2\r\n:<iter>\r\n$<n>\r\n<data>\r\n" reply into (iter, data); iter 0 ends the dump.
std::pair<std::string, std::string> ScanDumpStep(const std::string& reply) {
  REQUIRE(reply.rfind("*2\r\n:", 0) == 0);
  const size_t eol = reply.find("\r\n", 5);
  std::string iter = reply.substr(5, eol - 5);
  std::string rest = reply.substr(eol + 2);
  if (rest == "$-1\r\n") {
    return {iter, ""};
  }
  return {iter, BulkPayload(rest)};
}

TEST_CASE("CF.SCANDUMP chunks load back with CF.LOADCHUNK into an equal filter", "[cf]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.RESERVE", "src", "100", "BUCKETSIZE", "4", "EXPANSION", "2"}) == "+OK\r\n");
  std::vector<std::string> insert = {"CF.INSERT", "src", "ITEMS"};
  for (int i = 0; i < 300; ++i) {  // past the first sub-filter: the dump has several
    insert.push_back("i" + std::to_string(i));
  }
  REQUIRE(ts.Run(ts.client(), insert).rfind("*300\r\n", 0) == 0);
  std::vector<std::pair<std::string, std::string>> chunks;
  std::string iter = "0";
  for (int guard = 0; guard < 1000; ++guard) {
    auto [next, data] = ScanDumpStep(ts.Run({"CF.SCANDUMP", "src", iter}));
    if (next == "0") {
      CHECK(data.empty());
      break;
    }
    chunks.emplace_back(next, data);
    iter = next;
  }
  REQUIRE(chunks.size() >= 2);
  for (const auto& [it, data] : chunks) {
    CHECK(ts.Run({"CF.LOADCHUNK", "dst", it, data}) == "+OK\r\n");
  }
  CHECK(ts.Run({"CF.INFO", "dst"}) == ts.Run({"CF.INFO", "src"}));
  std::vector<std::string> mexists = {"CF.MEXISTS", "dst"};
  for (int i = 0; i < 300; ++i) {
    mexists.push_back("i" + std::to_string(i));
  }
  std::string all_present = "*300\r\n";
  for (int i = 0; i < 300; ++i) {
    all_present += ":1\r\n";
  }
  CHECK(ts.Run(ts.client(), mexists) == all_present);
}

TEST_CASE("CF.LOADCHUNK refuses a first chunk that is not a header", "[cf]") {
  TestServer ts;
  CHECK(ts.Run({"CF.LOADCHUNK", "k", "1", ""}) == "-Invalid header\r\n");
  CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
}

TEST_CASE("CF replies under RESP3 use booleans and a map", "[cf][resp3]") {
  TestServer ts;
  auto& c = ts.client();
  REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
  CHECK(c.proto == 3);
  CHECK(ts.Run({"CF.ADD", "k", "a"}) == "#t\r\n");
  CHECK(ts.Run({"CF.ADDNX", "k", "a"}) == "#f\r\n");
  CHECK(ts.Run({"CF.EXISTS", "k", "a"}) == "#t\r\n");
  CHECK(ts.Run({"CF.MEXISTS", "k", "a", "b"}) == "*2\r\n#t\r\n#f\r\n");
  CHECK(ts.Run({"CF.COUNT", "k", "a"}) == ":1\r\n");
  SECTION("CF.INSERT answers booleans, CF.INSERTNX integers") {
    CHECK(ts.Run({"CF.INSERT", "k", "ITEMS", "b"}) == "*1\r\n#t\r\n");
    CHECK(ts.Run({"CF.INSERTNX", "k", "ITEMS", "b", "c"}) == "*2\r\n:0\r\n:1\r\n");
  }
  SECTION("CF.DEL answers a boolean") {
    CHECK(ts.Run({"CF.DEL", "k", "a"}) == "#t\r\n");
    CHECK(ts.Run({"CF.DEL", "k", "a"}) == "#f\r\n");
  }
  SECTION("CF.INFO is a map of eight fields") {
    CHECK(ts.Run({"CF.INFO", "k"}) ==
          "%8\r\n+Size\r\n:1080\r\n+Number of buckets\r\n:512\r\n+Number of filters\r\n:1\r\n"
          "+Number of items inserted\r\n:1\r\n+Number of items deleted\r\n:0\r\n"
          "+Bucket size\r\n:2\r\n+Expansion rate\r\n:1\r\n+Max iterations\r\n:20\r\n");
  }
}

}  // namespace
}  // namespace cuckood::test

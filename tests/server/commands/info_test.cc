// INFO: sections chosen by name, in Redis's order, "# Title" headers and field:value lines; the
// keyspace, command, error and hit/miss counters follow the commands run.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

bool Has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST_CASE("INFO keyspace counts keys per non-empty database", "[info]") {
  TestServer ts;
  CHECK(BulkPayload(ts.Run({"INFO", "keyspace"})) == "# Keyspace\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SELECT", "2"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "t", "v"}) == "+OK\r\n");
  CHECK(BulkPayload(ts.Run({"INFO", "keyspace"})) ==
        "# Keyspace\r\ndb0:keys=2,expires=0,avg_ttl=0\r\ndb2:keys=1,expires=0,avg_ttl=0\r\n");
}

TEST_CASE("INFO server reports Redis 7.0's version and the bound port", "[info]") {
  TestServer ts;
  const std::string text = BulkPayload(ts.Run({"INFO", "server"}));
  CHECK(text.rfind("# Server\r\n", 0) == 0);
  CHECK(Has(text, "\r\nredis_version:7.0.15\r\n"));
  CHECK(Has(text, "\r\ntcp_port:" + std::to_string(ts.server().process().port) + "\r\n"));
  CHECK(Has(text, "\r\nrun_id:" + ts.server().process().run_id + "\r\n"));
  CHECK(ts.server().process().run_id.size() == 40);
  CHECK_FALSE(Has(text, "# Keyspace"));
}

TEST_CASE("INFO picks sections case-insensitively and prints them in Redis's order", "[info]") {
  TestServer ts;
  const std::string text = BulkPayload(ts.Run({"INFO", "KEYSPACE", "Server"}));
  const size_t server = text.find("# Server\r\n");
  const size_t keyspace = text.find("# Keyspace\r\n");
  REQUIRE(server == 0);
  REQUIRE(keyspace != std::string::npos);
  CHECK(text.substr(keyspace - 4, 4) == "\r\n\r\n");  // an empty line between sections
  CHECK_FALSE(Has(text, "# Clients"));
  SECTION("an unknown section selects nothing") {
    CHECK(ts.Run({"INFO", "nosuchsection"}) == "$0\r\n\r\n");
  }
  SECTION("the default set has no commandstats; all has") {
    REQUIRE(ts.Run({"PING"}) == "+PONG\r\n");
    const std::string def = BulkPayload(ts.Run({"INFO"}));
    CHECK(Has(def, "# Server\r\n"));
    CHECK(Has(def, "# Keyspace\r\n"));
    CHECK_FALSE(Has(def, "# Commandstats\r\n"));
    const std::string all = BulkPayload(ts.Run({"INFO", "all"}));
    CHECK(Has(all, "# Commandstats\r\n"));
    CHECK(Has(all, "\r\ncmdstat_ping:calls=1,"));
  }
}

TEST_CASE("INFO commandstats counts calls, rejected and failed calls", "[info]") {
  TestServer ts;
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "b"}) == ":1\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"GET"}).rfind("-ERR wrong number", 0) == 0);  // rejected before running
  REQUIRE(ts.Run({"GET", "f"}).rfind("-WRONGTYPE", 0) == 0);    // failed while running
  const std::string text = BulkPayload(ts.Run({"INFO", "commandstats"}));
  CHECK(text.rfind("# Commandstats\r\n", 0) == 0);
  CHECK(Has(text, "\r\ncmdstat_cf.add:calls=2,usec="));
  CHECK(Has(text, "\r\ncmdstat_set:calls=1,usec="));
  const size_t get = text.find("\r\ncmdstat_get:calls=1,");
  REQUIRE(get != std::string::npos);
  const std::string get_line = text.substr(get + 2, text.find("\r\n", get + 2) - get - 2);
  CHECK(get_line.find(",rejected_calls=1,failed_calls=1") != std::string::npos);
  SECTION("CONFIG RESETSTAT clears them") {
    REQUIRE(ts.Run({"CONFIG", "RESETSTAT"}) == "+OK\r\n");
    const std::string after = BulkPayload(ts.Run({"INFO", "commandstats"}));
    CHECK_FALSE(Has(after, "cmdstat_cf.add:"));
  }
}

TEST_CASE("INFO errorstats counts replies by error prefix", "[info]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "s", "a"}).rfind("-WRONGTYPE", 0) == 0);
  REQUIRE(ts.Run({"CF.INFO", "s"}).rfind("-WRONGTYPE", 0) == 0);
  REQUIRE(ts.Run({"NOSUCHCMD"}).rfind("-ERR unknown command", 0) == 0);
  const std::string text = BulkPayload(ts.Run({"INFO", "errorstats"}));
  CHECK(text.rfind("# Errorstats\r\n", 0) == 0);
  CHECK(Has(text, "\r\nerrorstat_WRONGTYPE:count=2\r\n"));
  CHECK(Has(text, "\r\nerrorstat_ERR:count=1\r\n"));
}

TEST_CASE("INFO stats counts keyspace hits and misses", "[info]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"GET", "s"}) == Bulk("v"));
  REQUIRE(ts.Run({"GET", "s"}) == Bulk("v"));
  REQUIRE(ts.Run({"GET", "missing"}) == "$-1\r\n");
  const std::string text = BulkPayload(ts.Run({"INFO", "stats"}));
  CHECK(text.rfind("# Stats\r\n", 0) == 0);
  CHECK(Has(text, "\r\nkeyspace_hits:2\r\n"));
  CHECK(Has(text, "\r\nkeyspace_misses:1\r\n"));
}

TEST_CASE("INFO under RESP3 is a verbatim string", "[info][resp3]") {
  TestServer ts;
  REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
  const std::string reply = ts.Run({"INFO", "keyspace"});
  CHECK(reply == "=16\r\ntxt:# Keyspace\r\n\r\n");
}

}  // namespace
}  // namespace cuckood::test

// ROLE / WAIT / REPLICAOF / REPLCONF on a standalone primary with no replicas.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

// The replication offset in ROLE's reply of a primary: "*3\r\n$6\r\nmaster\r\n:<offset>\r\n*0\r\n".
int64_t PrimaryOffset(const std::string& role) {
  const std::string head = "*3\r\n$6\r\nmaster\r\n:";
  REQUIRE(role.rfind(head, 0) == 0);
  REQUIRE(role.substr(role.size() - 4) == "*0\r\n");
  return std::stoll(role.substr(head.size()));
}

TEST_CASE("ROLE of a primary without replicas; its offset grows with writes", "[replication]") {
  TestServer ts;
  const int64_t before = PrimaryOffset(ts.Run({"ROLE"}));
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == ":1\r\n");
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  const int64_t after = PrimaryOffset(ts.Run({"ROLE"}));
  CHECK(after > before);
  SECTION("reads leave it") {
    REQUIRE(ts.Run({"CF.EXISTS", "f", "a"}) == ":1\r\n");
    CHECK(PrimaryOffset(ts.Run({"ROLE"})) == after);
  }
}

TEST_CASE("WAIT with no replicas answers 0 at once", "[replication]") {
  TestServer ts;
  CHECK(ts.Run({"WAIT", "0", "0"}) == ":0\r\n");
  CHECK(ts.Run({"WAIT", "1", "10"}) == ":0\r\n");
  CHECK(ts.Run({"WAIT", "1", "-1"}) == "-ERR timeout is negative\r\n");
  CHECK(ts.Run({"WAIT", "1", "soon"}) == "-ERR timeout is not an integer or out of range\r\n");
  CHECK(ts.Run({"WAIT", "many", "0"}) == "-ERR value is not an integer or out of range\r\n");
}

TEST_CASE("REPLICAOF NO ONE on a primary; a bad port is refused", "[replication]") {
  TestServer ts;
  CHECK(ts.Run({"REPLICAOF", "NO", "ONE"}) == "+OK\r\n");
  CHECK(ts.Run({"REPLICAOF", "127.0.0.1", "port"}) == "-ERR Invalid master port\r\n");
  CHECK(ts.Run({"SLAVEOF", "127.0.0.1", "65536"}) == "-ERR Invalid master port\r\n");
  CHECK(ts.Run({"REPLICAOF", "127.0.0.1"}) ==
        "-ERR wrong number of arguments for 'replicaof' command\r\n");
  CHECK(PrimaryOffset(ts.Run({"ROLE"})) >= 0);
}

TEST_CASE("REPLCONF options a replica sends, and the ones it must not", "[replication]") {
  TestServer ts;
  CHECK(ts.Run({"REPLCONF", "listening-port", "6380", "capa", "eof"}) == "+OK\r\n");
  CHECK(ts.client().repl_listening_port == 6380);
  CHECK(ts.Run({"REPLCONF", "ip-address", "10.0.0.2"}) == "+OK\r\n");
  CHECK(ts.client().repl_ip == "10.0.0.2");
  CHECK(ts.Run({"REPLCONF", "listening-port", "x"}) ==
        "-ERR value is not an integer or out of range\r\n");
  CHECK(ts.Run({"REPLCONF", "listening-port"}) == "-ERR syntax error\r\n");
  CHECK(ts.Run({"REPLCONF", "colour", "blue"}) == "-ERR Unrecognized REPLCONF option: colour\r\n");
  CHECK(ts.Run({"REPLCONF", "ip-address", std::string(256, 'a')}) ==
        "-ERR REPLCONF ip-address provided by replica instance is too long: 256 bytes\r\n");
}

}  // namespace
}  // namespace cuckood::test

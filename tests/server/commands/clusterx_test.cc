// CLUSTERX (the topology a controller pushes): node id, versioned topology, and the routing it
// decides — a key of a slot this node serves runs here, others are answered with MOVED.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

const std::string kMe(40, 'a');
const std::string kOther(40, 'b');

std::string Line(const std::string& id, int port, const std::string& slots) {
  return id + " 127.0.0.1 " + std::to_string(port) + " master - " + slots + "\n";
}

TEST_CASE("CLUSTERX is refused when cluster support is disabled", "[clusterx]") {
  TestServer ts;
  CHECK(ts.Run({"CLUSTERX", "VERSION"}) == Err("ERR Cluster mode is not enabled"));
}

TEST_CASE("CLUSTERX SETNODES installs a versioned topology that routes the keys", "[clusterx]") {
  TestServer ts([](server::Config& cfg) { cfg.cluster_enabled = true; });
  REQUIRE(ts.Run({"CLUSTERX", "SETNODEID", kMe}) == "+OK\r\n");
  CHECK(BulkPayload(ts.Run({"CLUSTERX", "MYID"})) == kMe);
  CHECK(ts.Run({"CLUSTERX", "SETNODEID", "abc"}) == Err("ERR Invalid cluster node id"));
  const int port = ts.server().process().port;
  // Slots 0-8000 here, the rest on another node. "a" is slot 15495, "b" slot 3300.
  const std::string topology = Line(kMe, port, "0-8000") + Line(kOther, port + 1, "8001-16383");
  REQUIRE(ts.Run({"CLUSTERX", "SETNODES", topology, "3"}) == "+OK\r\n");
  CHECK(BulkPayload(ts.Run({"CLUSTERX", "VERSION"})) == "3");
  CHECK(ts.Run({"CF.ADD", "b", "x"}) == Int(1));
  CHECK(ts.Run({"CF.ADD", "a", "x"}) == Err("MOVED 15495 127.0.0.1:" + std::to_string(port + 1)));
  CHECK(ts.Run({"CF.EXISTS", "a", "x"}).rfind("-MOVED 15495 ", 0) == 0);
  SECTION("a lower version is refused, a bad one too, and nothing changes") {
    CHECK(ts.Run({"CLUSTERX", "SETNODES", Line(kMe, port, "0-16383"), "2"}) ==
          Err("ERR Invalid cluster version"));
    CHECK(ts.Run({"CLUSTERX", "SETNODES", Line(kMe, port, "0-16383"), "x"}) ==
          Err("ERR Invalid version"));
    CHECK(ts.Run({"CF.ADD", "a", "x"}).rfind("-MOVED ", 0) == 0);
  }
  SECTION("overlapping slots are refused") {
    CHECK(ts.Run({"CLUSTERX", "SETNODES", topology + Line(std::string(40, 'c'), 1, "7"), "9"}) ==
          Err("ERR Slot distribution is overlapped"));
  }
  SECTION("a higher version moves the slots here") {
    REQUIRE(ts.Run({"CLUSTERX", "SETNODES", Line(kMe, port, "0-16383"), "4"}) == "+OK\r\n");
    CHECK(ts.Run({"CF.ADD", "a", "x"}) == Int(1));
    CHECK(ts.Run({"CF.EXISTS", "b", "x"}) == Int(1));  // written under version 3, still here
  }
}

}  // namespace
}  // namespace cuckood::test

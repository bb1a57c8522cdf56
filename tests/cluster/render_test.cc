#include "cluster/render.h"

#include <catch2/catch.hpp>
#include <string>

#include "node_ids.h"

using cuckood::cluster::RenderInfo;
using cuckood::cluster::RenderNodes;
using cuckood::cluster::Shards;
using cuckood::cluster::SlotRange;
using cuckood::cluster::SlotTable;
using cuckood::cluster::Topology;
using cuckood::cluster::View;

namespace {

View Make(const std::string& myid) {
  auto t = Topology::Parse(kA + " 127.0.0.1 7301 master - 0-99 200-5460 7000\n" + kB +
                           " 127.0.0.1 7302 slave " + kA + "\n" + kC +
                           " 127.0.0.1 7303 master - 100-199 5461-6999 7001-16383\n");
  REQUIRE(t.ok());
  View v;
  v.version = 7;
  v.myid = myid;
  v.topology = std::make_shared<const Topology>(std::move(*t));
  return v;
}

}  // namespace

TEST_CASE("RenderInfo shows the fields the controller and redis-cli read", "[cluster][render]") {
  const View v = Make(kA);
  CHECK(RenderInfo(v) ==
        "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"
        "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:3\r\n"
        "cluster_size:2\r\ncluster_current_epoch:7\r\ncluster_my_epoch:7\r\n");
}

TEST_CASE("RenderNodes uses Redis's line format with myself and the version as epoch",
          "[cluster][render]") {
  const View v = Make(kB);
  CHECK(RenderNodes(v, 1234) ==
        kA + " 127.0.0.1:7301@17301 master - 0 1234 7 connected 0-99 200-5460 7000\n" + kB +
            " 127.0.0.1:7302@17302 myself,slave " + kA + " 0 0 7 connected\n" + kC +
            " 127.0.0.1:7303@17303 master - 0 1234 7 connected 100-199 5461-6999 7001-16383\n");
}

TEST_CASE("SlotTable lists ranges in slot order, master first", "[cluster][render]") {
  const View v = Make(kA);
  const auto table = SlotTable(v);
  REQUIRE(table.size() == 6);
  CHECK(table[0].range == SlotRange{0, 99});
  REQUIRE(table[0].nodes.size() == 2);
  CHECK(table[0].nodes[0]->id == kA);
  CHECK(table[0].nodes[1]->id == kB);
  CHECK(table[1].range == SlotRange{100, 199});
  CHECK(table[1].nodes.size() == 1);
  CHECK(table[5].range == SlotRange{7001, 16383});
  CHECK(SlotTable(View{}).empty());
}

TEST_CASE("Shards groups each master with its replicas", "[cluster][render]") {
  const View v = Make(kA);
  const auto shards = Shards(v);
  REQUIRE(shards.size() == 2);
  CHECK(shards[0].master->id == kA);
  REQUIRE(shards[0].replicas.size() == 1);
  CHECK(shards[0].replicas[0]->id == kB);
  CHECK(shards[1].master->id == kC);
  CHECK(shards[1].replicas.empty());
}

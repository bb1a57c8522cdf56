#include "cluster/topology.h"

#include <catch2/catch.hpp>
#include <string>

#include "node_ids.h"

using cuckood::cluster::KeySlot;
using cuckood::cluster::Role;
using cuckood::cluster::SlotRange;
using cuckood::cluster::Topology;

namespace {

std::string ParseError(const std::string& text) {
  auto t = Topology::Parse(text);
  REQUIRE_FALSE(t.ok());
  return t.status().message();
}

}  // namespace

TEST_CASE("KeySlot matches Redis Cluster's vectors, hash tags included", "[cluster][slot]") {
  CHECK(KeySlot("foo") == 12182);
  CHECK(KeySlot("bar") == 5061);
  CHECK(KeySlot("hello") == 866);
  CHECK(KeySlot("a") == 15495);
  CHECK(KeySlot("") == 0);
  CHECK(KeySlot("{user1000}.following") == 3443);
  CHECK(KeySlot("foo{}{bar}") == 8363);
  CHECK(KeySlot("foo{{bar}}zap") == 4015);
  CHECK(KeySlot("foo{bar}{zap}") == 5061);
}

TEST_CASE("Topology parses the controller's SETNODES text", "[cluster][topology]") {
  const std::string text = kA + " 127.0.0.1 7301 master - 0-5460\n" + kB +
                           " 127.0.0.1 7302 slave " + kA + "\n" + kC +
                           " localhost 7303 master - 5461-10921 10922 10923-16383\n";
  auto t = Topology::Parse(text);
  REQUIRE(t.ok());
  REQUIRE(t->nodes().size() == 3);
  CHECK(t->nodes()[0].role == Role::kMaster);
  CHECK(t->nodes()[1].role == Role::kSlave);
  CHECK(t->nodes()[1].master_id == kA);
  CHECK(t->nodes()[2].host == "localhost");
  CHECK(t->SlotsAssigned() == 16384);
  CHECK(t->Size() == 2);
  CHECK(t->OwnerOf(0)->id == kA);
  CHECK(t->OwnerOf(5460)->id == kA);
  CHECK(t->OwnerOf(5461)->id == kC);
  CHECK(t->OwnerOf(16383)->id == kC);
  // Adjacent ranges merge.
  REQUIRE(t->nodes()[2].slots.size() == 1);
  CHECK(t->nodes()[2].slots[0] == SlotRange{5461, 16383});
  CHECK(t->ReplicasOf(kA).size() == 1);

  SECTION("the last line may lack its newline; empty lines and repeated spaces are skipped") {
    auto u = Topology::Parse("\n" + kA + "  127.0.0.1 7301   master - 0-99 500\n\n");
    REQUIRE(u.ok());
    CHECK(u->SlotsAssigned() == 101);
  }
  SECTION("Serialize gives text that parses to the same topology") {
    auto again = Topology::Parse(t->Serialize());
    REQUIRE(again.ok());
    CHECK(again->Serialize() == t->Serialize());
    CHECK(t->Serialize().back() == '\n');
  }
  SECTION("a master without slots is allowed") {
    auto u = Topology::Parse(kA + " 127.0.0.1 7301 master -\n");
    REQUIRE(u.ok());
    CHECK(u->SlotsAssigned() == 0);
    CHECK(u->Size() == 0);
  }
}

TEST_CASE("Topology refuses malformed text with Kvrocks' texts", "[cluster][topology]") {
  CHECK(ParseError("") == "ERR Invalid cluster nodes info");
  CHECK(ParseError("\n\n") == "ERR Invalid cluster nodes info");
  CHECK(ParseError(kA + " 127.0.0.1 7301 master\n") == "ERR Invalid cluster nodes info");
  SECTION("node ids are 40 characters of [A-Za-z0-9]") {
    CHECK(ParseError("abc 127.0.0.1 7301 master - 0-16383\n") == "ERR Invalid cluster node id");
    std::string dashed = kA;
    dashed[3] = '-';
    CHECK(ParseError(dashed + " 127.0.0.1 7301 master - 0\n") == "ERR Invalid cluster node id");
    CHECK(ParseError(kA + "x 127.0.0.1 7301 master - 0\n") == "ERR Invalid cluster node id");
    CHECK(ParseError(kA + " 127.0.0.1 7301 slave nosuch\n") == "ERR Invalid cluster node id");
    CHECK(ParseError(kA + " 127.0.0.1 7301 master " + kB + " 0\n") ==
          "ERR Invalid cluster node id");
  }
  SECTION("ports are 1..65535") {
    for (const char* port : {"0", "65536", "-1", "70x", "+5"}) {
      INFO(port);
      CHECK(ParseError(kA + " 127.0.0.1 " + port + " master - 0\n") ==
            "ERR Invalid cluster node port");
    }
  }
  SECTION("roles are master, slave or replica") {
    CHECK(ParseError(kA + " 127.0.0.1 7301 primary - 0\n") == "ERR Invalid cluster node role");
    CHECK(Topology::Parse(kB + " 127.0.0.1 7302 REPLICA " + kA + "\n").ok());
  }
  SECTION("a slave line carries no slots") {
    CHECK(ParseError(kB + " 127.0.0.1 7302 slave " + kA + " 0-5\n") ==
          "ERR Invalid cluster nodes info");
  }
  SECTION("slot ranges: 0..16383, start below end") {
    for (const char* r :
         {"16384", "0-16384", "-1", "5-5", "9-3", "a-b", "1-2-3", "1-", "-", "0x10"}) {
      INFO(r);
      CHECK(ParseError(kA + " 127.0.0.1 7301 master - " + std::string(r) + "\n") ==
            "ERR Slot is out of range");
    }
    CHECK(Topology::Parse(kA + " 127.0.0.1 7301 master - 0-16383\n").ok());
  }
  SECTION("a slot served twice is overlapping") {
    CHECK(ParseError(kA + " 127.0.0.1 7301 master - 0-100\n" + kC +
                     " 127.0.0.1 7303 master - 100-200\n") ==
          "ERR Slot distribution is overlapped");
    CHECK(ParseError(kA + " 127.0.0.1 7301 master - 0-100 50\n") ==
          "ERR Slot distribution is overlapped");
  }
  SECTION("a node id given twice is refused") {
    CHECK(ParseError(kA + " 127.0.0.1 7301 master - 0-100\n" + kA +
                     " 127.0.0.1 7302 master - 200\n") == "ERR Duplicate cluster node id");
  }
}

TEST_CASE("AssignSlots moves slots to a master only", "[cluster][topology]") {
  auto t = Topology::Parse(kA + " h 1 master - 0-16383\n" + kC + " h 2 master -\n" + kB +
                           " h 3 slave " + kA + "\n");
  REQUIRE(t.ok());
  REQUIRE(t->AssignSlots({{0, 99}, {500, 500}}, kC).ok());
  CHECK(t->OwnerOf(99)->id == kC);
  CHECK(t->OwnerOf(100)->id == kA);
  CHECK(t->OwnerOf(500)->id == kC);
  CHECK(t->Find(kC)->slots == std::vector<SlotRange>{{0, 99}, {500, 500}});
  CHECK(t->Find(kA)->slots == std::vector<SlotRange>{{100, 499}, {501, 16383}});
  CHECK(t->AssignSlots({{0, 1}}, kB).message() == "ERR The node isn't a master");
  CHECK(t->AssignSlots({{0, 1}}, std::string(40, 'z')).message() ==
        "ERR No this node in the cluster");
}

TEST_CASE("Slot arguments of SETSLOT accept a-a; ids and ranges format back", "[cluster]") {
  SlotRange r;
  CHECK(cuckood::cluster::ParseSlotArgument("5-5", &r));
  CHECK(r == SlotRange{5, 5});
  CHECK_FALSE(cuckood::cluster::ParseSlotArgument("6-5", &r));
  CHECK_FALSE(cuckood::cluster::ParseSlotArgument("16384", &r));
  CHECK(cuckood::cluster::FormatSlotRange({5, 5}) == "5");
  CHECK(cuckood::cluster::FormatSlotRange({0, 99}) == "0-99");
  CHECK(cuckood::cluster::ValidNodeId(kA));
  CHECK_FALSE(cuckood::cluster::ValidNodeId(kA.substr(1)));
}

TEST_CASE("Topology takes one master per slot, and no more nodes than slots", "[cluster]") {
  std::string text;
  auto id = [](int i) {
    std::string s = std::to_string(i);
    return std::string(40 - s.size(), 'n') + s;
  };
  for (int i = 0; i < cuckood::cluster::kSlotCount; ++i) {
    text += id(i) + " 10.0.0.1 " + std::to_string(1 + i % 60000) + " master - " +
            std::to_string(i) + "\n";
  }
  auto t = Topology::Parse(text);
  REQUIRE(t.ok());
  CHECK(t->Size() == cuckood::cluster::kSlotCount);
  CHECK(t->OwnerOf(16383)->id == id(16383));
  CHECK(t->Find(id(77))->slots == std::vector<SlotRange>{{77, 77}});
  text += id(99999) + " 10.0.0.1 1 master -\n";
  CHECK(Topology::Parse(text).status().message() == "ERR Invalid cluster nodes info");
}

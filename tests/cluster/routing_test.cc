#include "cluster/routing.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "node_ids.h"

using cuckood::cluster::KeySlot;
using cuckood::cluster::Route;
using cuckood::cluster::RouteKind;
using cuckood::cluster::RouteQuery;
using cuckood::cluster::Topology;

namespace {

// kA: master 0-5460 on 7301
// kB: slave of A on 7302
// kC: master 5461-10921, 7303

Topology MakeRoutingTopology() {
  auto t =
      Topology::Parse(kA + " 127.0.0.1 7301 master - 0-5460\n" + kB + " 127.0.0.1 7302 slave " +
                      kA + "\n" + kC + " host-c 7303 master - 5461-10921\n");
  REQUIRE(t.ok());
  return *t;
}

RouteQuery Query(const std::vector<std::string_view>& keys, bool write = false,
                 bool readonly = false) {
  RouteQuery q;
  q.keys = keys;
  q.write = write;
  q.readonly_client = readonly;
  return q;
}

}  // namespace

TEST_CASE("Route runs keys of this node's slots here", "[cluster][routing]") {
  const Topology t = MakeRoutingTopology();
  const auto* a = t.Find(kA);
  std::vector<std::string_view> keys = {"bar"};  // slot 5061, served by A
  auto r = Route(&t, a, Query(keys, true));
  CHECK(r.kind == RouteKind::kHere);
  CHECK(r.slot == 5061);
  CHECK(r.error.empty());
  std::vector<std::string_view> same = {"foo{bar}{zap}", "bar", "{bar}x"};
  CHECK(Route(&t, a, Query(same, true)).kind == RouteKind::kHere);
}

TEST_CASE("Route answers MOVED with the owner's address", "[cluster][routing]") {
  const Topology t = MakeRoutingTopology();
  std::vector<std::string_view> keys = {"hello{foo}"};  // slot 12182: nobody
  std::vector<std::string_view> c_keys = {"{z}"};
  const int slot = KeySlot("{z}");
  REQUIRE(slot >= 5461);
  REQUIRE(slot <= 10921);
  auto r = Route(&t, t.Find(kA), Query(c_keys));
  CHECK(r.kind == RouteKind::kMoved);
  CHECK(r.error == "MOVED " + std::to_string(slot) + " host-c:7303");
  SECTION("a node not in the topology redirects too") {
    CHECK(Route(&t, nullptr, Query(c_keys)).error == r.error);
  }
  SECTION("a slot without a master is CLUSTERDOWN") {
    auto down = Route(&t, t.Find(kA), Query(keys));
    CHECK(down.kind == RouteKind::kClusterDown);
    CHECK(down.error == "CLUSTERDOWN Hash slot not served");
    CHECK(down.slot == 12182);
  }
  SECTION("no topology at all is CLUSTERDOWN") {
    CHECK(Route(nullptr, nullptr, Query(keys)).error == "CLUSTERDOWN Hash slot not served");
  }
}

TEST_CASE("Route refuses keys of several slots with CROSSSLOT", "[cluster][routing]") {
  const Topology t = MakeRoutingTopology();
  std::vector<std::string_view> keys = {"bar", "foo"};
  auto r = Route(&t, t.Find(kA), Query(keys));
  CHECK(r.kind == RouteKind::kCrossSlot);
  CHECK(r.error == "CROSSSLOT Keys in request don't hash to the same slot");
  SECTION("even when no node serves them") {
    CHECK(Route(nullptr, nullptr, Query(keys)).kind == RouteKind::kCrossSlot);
  }
}

TEST_CASE("Route: a replica serves reads of its master's slots to READONLY clients only",
          "[cluster][routing]") {
  const Topology t = MakeRoutingTopology();
  const auto* b = t.Find(kB);
  std::vector<std::string_view> keys = {"bar"};  // A's slot
  CHECK(Route(&t, b, Query(keys, false, true)).kind == RouteKind::kHere);
  CHECK(Route(&t, b, Query(keys, false, false)).error == "MOVED 5061 127.0.0.1:7301");
  CHECK(Route(&t, b, Query(keys, true, true)).error == "MOVED 5061 127.0.0.1:7301");
  std::vector<std::string_view> c_keys = {"{z}"};  // another master's slot
  CHECK(Route(&t, b, Query(c_keys, false, true)).kind == RouteKind::kMoved);
}

TEST_CASE("Route runs commands without keys here", "[cluster][routing]") {
  std::vector<std::string_view> none;
  auto r = Route(nullptr, nullptr, Query(none, true));
  CHECK(r.kind == RouteKind::kHere);
  CHECK(r.slot == -1);
}

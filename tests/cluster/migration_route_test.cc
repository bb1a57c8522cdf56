// Routing of slots while they migrate (ClusterState::SetMigrating / SetImporting): TRYAGAIN for
// writes in the write-forbidden window, MOVED to the destination once handed over, and the
// destination serving an import that succeeded, each until a newer topology arrives.
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "node_ids.h"

namespace fs = std::filesystem;
using namespace cuckood::cluster;

namespace {

std::string Topo(const std::string& a_slots, const std::string& c_slots) {
  return kA + " 127.0.0.1 7301 master - " + a_slots + "\n" + kC + " 127.0.0.1 7303 master - " +
         c_slots + "\n";
}

struct TestNode {
  fs::path dir;
  ClusterState state;
  explicit TestNode(const std::string& id, int port)
      : dir(fs::temp_directory_path() /
            ("cuckood_migration_test_" + std::to_string(std::random_device()()))),
        state(Options(dir, port)) {
    REQUIRE(state.SetNodeId(id).ok());
    REQUIRE(state.SetNodes(Topo("0-5460", "5461-16383"), 1, false).ok());
  }
  ~TestNode() { fs::remove_all(dir); }
  static ClusterOptions Options(const fs::path& dir, int port) {
    fs::create_directories(dir);
    ClusterOptions o;
    o.nodes_file = (dir / "nodes.conf").string();
    o.bind_addresses = {"127.0.0.1"};
    o.port = port;
    return o;
  }
  RouteResult Route(std::string_view key, bool write) {
    std::vector<std::string_view> keys{key};
    RouteQuery q;
    q.keys = keys;
    q.write = write;
    return state.Route(q);
  }
};

// "hello" is in slot 866.
constexpr std::string_view kKey = "hello";

}  // namespace

TEST_CASE("A migrating source forbids writes, then redirects until the new topology",
          "[migration]") {
  TestNode a(kA, 7301);
  MigrationStatus m;
  m.state = MigrationState::kStart;
  m.range = {800, 900};
  m.node_id = kC;
  a.state.SetMigrating(m);
  CHECK(a.Route(kKey, true).kind == RouteKind::kHere);
  m.forbidden = true;
  a.state.SetMigrating(m);
  CHECK(a.Route(kKey, true).kind == RouteKind::kTryAgain);
  CHECK(a.Route(kKey, true).error.rfind("TRYAGAIN ", 0) == 0);
  CHECK(a.Route(kKey, false).kind == RouteKind::kHere);   // reads go on
  CHECK(a.Route("foo", true).kind == RouteKind::kMoved);  // (slot 12182: not ours anyway)
  m.state = MigrationState::kSuccess;
  m.forbidden = false;
  a.state.SetMigrating(m);
  CHECK(a.Route(kKey, false).error == "MOVED 866 127.0.0.1:7303");
  CHECK(a.state.MigrationInfo() == "migrating_slot(s): 800-900\r\ndestination_node: " + kC +
                                       "\r\nmigrating_state: success\r\n");
  // A newer topology decides again (here: the controller did not move them).
  REQUIRE(a.state.SetNodes(Topo("0-5460", "5461-16383"), 2, false).ok());
  CHECK(a.Route(kKey, true).kind == RouteKind::kHere);
}

TEST_CASE("A destination serves an import once it succeeded", "[migration]") {
  TestNode c(kC, 7303);
  CHECK(c.Route(kKey, true).kind == RouteKind::kMoved);
  MigrationStatus m;
  m.state = MigrationState::kStart;
  m.range = {866, 866};
  c.state.SetImporting(m);
  CHECK(c.Route(kKey, true).kind == RouteKind::kMoved);  // half-imported: not served
  CHECK(c.state.MigrationInfo() == "importing_slot(s): 866\r\nimport_state: start\r\n");
  m.state = MigrationState::kSuccess;
  c.state.SetImporting(m);
  CHECK(c.Route(kKey, true).kind == RouteKind::kHere);
  REQUIRE(c.state.SetNodes(Topo("0-865 867-5460", "866 5461-16383"), 2, false).ok());
  CHECK(c.Route(kKey, true).kind == RouteKind::kHere);
  CHECK(c.Route("bar", true).kind == RouteKind::kMoved);  // 5061 stays with A
}

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/nodes_file.h"
#include "node_ids.h"

namespace fs = std::filesystem;
using cuckood::cluster::ClusterOptions;
using cuckood::cluster::ClusterState;
using cuckood::cluster::NodesFileContent;
using cuckood::cluster::ReadNodesFile;
using cuckood::cluster::RouteKind;
using cuckood::cluster::RouteQuery;
using cuckood::cluster::WriteNodesFile;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("cuckood_cluster_test_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string File(const std::string& name) const { return (path / name).string(); }
};

std::string Topo(const std::string& a_role = "master - 0-5460") {
  return kA + " 127.0.0.1 7301 " + a_role + "\n" + kB + " 127.0.0.1 7302 slave " + kA + "\n" + kC +
         " 127.0.0.1 7303 master - 5461-16383\n";
}

ClusterOptions Options(const TempDir& dir, int port = 7301) {
  ClusterOptions o;
  o.nodes_file = dir.File("nodes.conf");
  o.bind_addresses = {"127.0.0.1"};
  o.port = port;
  return o;
}

}  // namespace

TEST_CASE("SETNODES versions: lower refused, same accepted unchanged, higher adopted",
          "[cluster][state]") {
  TempDir dir;
  ClusterState state(Options(dir));
  REQUIRE(state.Load().ok());
  CHECK(state.Snapshot()->version == -1);
  CHECK(state.Snapshot()->topology == nullptr);
  REQUIRE(state.SetNodeId(kA).ok());
  REQUIRE(state.SetNodes(Topo(), 2, false).ok());
  auto v2 = state.Snapshot();
  CHECK(v2->version == 2);
  CHECK(v2->myself()->id == kA);

  CHECK(state.SetNodes(Topo(), 1, false).message() == "ERR Invalid cluster version");
  CHECK(state.SetNodes(Topo(), -1, true).message() == "ERR Invalid cluster version");
  SECTION("the same version changes nothing, even with other text") {
    const std::string other = kA + " 127.0.0.1 7301 master - 0-16383\n";
    REQUIRE(state.SetNodes(other, 2, false).ok());
    CHECK(state.Snapshot() == v2);
    CHECK(state.SetNodes("garbage", 2, false).ok());
    CHECK(state.Snapshot() == v2);
  }
  SECTION("FORCE adopts a lower version") {
    REQUIRE(state.SetNodes(kA + " 127.0.0.1 7301 master - 0-16383\n", 1, true).ok());
    CHECK(state.Snapshot()->version == 1);
    CHECK(state.Snapshot()->topology->SlotsAssigned() == 16384);
  }
  SECTION("a bad topology at a higher version changes nothing") {
    CHECK(state.SetNodes("x 1 2 master -\n", 3, false).message() == "ERR Invalid cluster node id");
    CHECK(state.Snapshot() == v2);
  }
  SECTION("SETNODEID refuses malformed ids") {
    CHECK(state.SetNodeId("short").message() == "ERR Invalid cluster node id");
    CHECK(state.SetNodeId(std::string(39, 'a') + "_").message() == "ERR Invalid cluster node id");
    CHECK(state.Snapshot()->myid == kA);
  }
}

TEST_CASE("SETSLOT needs the next version and moves slots", "[cluster][state]") {
  TempDir dir;
  ClusterState state(Options(dir));
  REQUIRE(state.SetNodes(Topo(), 5, false).ok());
  CHECK(state.SetSlot({{0, 9}}, kC, 5).message() == "ERR Invalid cluster version");
  CHECK(state.SetSlot({{0, 9}}, kC, 7).message() == "ERR Invalid cluster version");
  CHECK(state.SetSlot({{0, 9}}, kB, 6).message() == "ERR The node isn't a master");
  CHECK(state.SetSlot({{0, 9}}, "bad", 6).message() == "ERR Invalid cluster node id");
  REQUIRE(state.SetSlot({{0, 9}}, kC, 6).ok());
  CHECK(state.Snapshot()->version == 6);
  CHECK(state.Snapshot()->topology->OwnerOf(9)->id == kC);
  CHECK(state.Snapshot()->topology->OwnerOf(10)->id == kA);
}

TEST_CASE("The nodes file keeps id, version and topology across restarts", "[cluster][state]") {
  TempDir dir;
  {
    ClusterState state(Options(dir));
    REQUIRE(state.SetNodeId(kB).ok());
    REQUIRE(state.SetNodes(Topo(), 9, false).ok());
  }
  CHECK_FALSE(fs::exists(dir.File("nodes.conf.tmp")));
  ClusterState again(Options(dir));
  REQUIRE(again.Load().ok());
  auto v = again.Snapshot();
  CHECK(v->version == 9);
  CHECK(v->myid == kB);
  CHECK(v->topology->Serialize() == Topo());
  SECTION("RESET forgets the topology; HARD the id too; both persist") {
    REQUIRE(again.Reset(false).ok());
    ClusterState soft(Options(dir));
    REQUIRE(soft.Load().ok());
    CHECK(soft.Snapshot()->version == -1);
    CHECK(soft.Snapshot()->myid == kB);
    REQUIRE(soft.Reset(true).ok());
    ClusterState hard(Options(dir));
    REQUIRE(hard.Load().ok());
    CHECK(hard.Snapshot()->myid.empty());
  }
}

TEST_CASE("ReadNodesFile refuses other formats and damaged files", "[cluster][state]") {
  TempDir dir;
  const std::string path = dir.File("nodes.conf");
  auto missing = ReadNodesFile(path);
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  auto write = [&](const std::string& text) {
    std::ofstream(path) << text;
    return ReadNodesFile(path);
  };
  CHECK(write("format 2\nversion 1\n").status().code() == cuckood::storage::Code::kCorruption);
  CHECK(write("version 1\n").status().code() == cuckood::storage::Code::kCorruption);
  CHECK(write("format 1\nversion x\n").status().code() == cuckood::storage::Code::kCorruption);
  CHECK(write("format 1\nversion 1\nslots 5\n").status().code() ==
        cuckood::storage::Code::kCorruption);
  CHECK(write("format 1\n").status().code() == cuckood::storage::Code::kCorruption);
  auto ok =
      write("# c\nformat 1\nid " + kA + "\nversion 3\nnode " + kA + " h 1 master - 0-16383\n");
  REQUIRE(ok.ok());
  CHECK((*ok)->version == 3);
  CHECK((*ok)->topology == kA + " h 1 master - 0-16383\n");
  SECTION("a topology that does not parse stops Load") {
    std::ofstream(path) << "format 1\nversion 3\nnode nonsense\n";
    ClusterState state(Options(dir));
    CHECK(state.Load().code() == cuckood::storage::Code::kCorruption);
  }
  SECTION("a write into a missing directory fails and keeps the old state") {
    ClusterOptions o = Options(dir);
    o.nodes_file = dir.File("no/such/dir/nodes.conf");
    ClusterState state(o);
    CHECK(state.SetNodes(Topo(), 1, false).code() == cuckood::storage::Code::kIoError);
    CHECK(state.Snapshot()->version == -1);
    CHECK_FALSE(WriteNodesFile(o.nodes_file, NodesFileContent{}).ok());
  }
}

TEST_CASE("A topology pushed before SETNODEID finds this node by port and address",
          "[cluster][state]") {
  TempDir dir;
  ClusterState state(Options(dir, 7303));
  REQUIRE(state.SetNodes(Topo(), 1, false).ok());
  CHECK(state.Snapshot()->myid == kC);
}

TEST_CASE("The replication hook hears each change of role", "[cluster][state]") {
  TempDir dir;
  ClusterState state(Options(dir));
  std::vector<std::optional<std::pair<std::string, int>>> calls;
  state.SetReplicationHook(
      [&](std::optional<std::pair<std::string, int>> m) { calls.push_back(std::move(m)); });
  REQUIRE(state.SetNodeId(kB).ok());
  CHECK(calls.empty());  // no topology yet
  REQUIRE(state.SetNodes(Topo(), 1, false).ok());
  REQUIRE(calls.size() == 1);
  CHECK(calls[0] == std::make_pair(std::string("127.0.0.1"), 7301));
  REQUIRE(state.SetNodes(Topo(), 2, false).ok());
  CHECK(calls.size() == 1);  // same role, same master
  // Failover: B becomes master of 0-5460, A its slave.
  const std::string failed_over = kA + " 127.0.0.1 7301 slave " + kB + "\n" + kB +
                                  " 127.0.0.1 7302 master - 0-5460\n" + kC +
                                  " 127.0.0.1 7303 master - 5461-16383\n";
  REQUIRE(state.SetNodes(failed_over, 3, false).ok());
  REQUIRE(calls.size() == 2);
  CHECK_FALSE(calls[1].has_value());
  SECTION("a hook installed later hears the current role at once") {
    std::vector<std::optional<std::pair<std::string, int>>> late;
    state.SetReplicationHook(
        [&](std::optional<std::pair<std::string, int>> m) { late.push_back(std::move(m)); });
    REQUIRE(late.size() == 1);
    CHECK_FALSE(late[0].has_value());
  }
  SECTION("a restart reports the role from the nodes file") {
    ClusterState again(Options(dir));
    REQUIRE(again.Load().ok());
    std::vector<std::optional<std::pair<std::string, int>>> loaded;
    again.SetReplicationHook(
        [&](std::optional<std::pair<std::string, int>> m) { loaded.push_back(std::move(m)); });
    REQUIRE(loaded.size() == 1);
    CHECK_FALSE(loaded[0].has_value());  // B is the master now
  }
}

TEST_CASE("ClusterState::Route reads the current topology", "[cluster][state]") {
  TempDir dir;
  ClusterState state(Options(dir));
  std::vector<std::string_view> keys = {"bar"};
  RouteQuery q;
  q.keys = keys;
  CHECK(state.Route(q).kind == RouteKind::kClusterDown);
  REQUIRE(state.SetNodeId(kA).ok());
  REQUIRE(state.SetNodes(Topo(), 1, false).ok());
  CHECK(state.Route(q).kind == RouteKind::kHere);
  std::vector<std::string_view> foo = {"foo"};
  q.keys = foo;
  CHECK(state.Route(q).error == "MOVED 12182 127.0.0.1:7303");
}

TEST_CASE("RESET turns a replica into a master for the hook", "[cluster][state]") {
  TempDir dir;
  ClusterState state(Options(dir));
  std::vector<std::optional<std::pair<std::string, int>>> calls;
  state.SetReplicationHook(
      [&](std::optional<std::pair<std::string, int>> m) { calls.push_back(std::move(m)); });
  REQUIRE(state.SetNodeId(kB).ok());
  REQUIRE(state.SetNodes(Topo(), 1, false).ok());
  REQUIRE(calls.size() == 1);
  REQUIRE(state.Reset(false).ok());
  REQUIRE(calls.size() == 2);
  CHECK_FALSE(calls[1].has_value());
  REQUIRE(state.Reset(false).ok());
  CHECK(calls.size() == 2);  // a master already
}

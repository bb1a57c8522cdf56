// CLUSTERX: the commands a controller (apache/kvrocks-controller) uses to run this node, with
// Kvrocks' arguments and texts: SETNODEID, SETNODES, SETSLOT, VERSION, MYID. MIGRATE (slot
// migration; server/slot_migration.h) and the node-to-node IMPORT / APPLYBATCH of a migration.
#include "cluster/cluster.h"
#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/slot_migration.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

// Kvrocks' texts.
constexpr std::string_view kClusterModeDisabled = "ERR Cluster mode is not enabled";
constexpr std::string_view kInvalidVersion = "ERR Invalid version";
constexpr std::string_view kInvalidSetNodesOptions = "ERR Invalid setnodes options";
constexpr std::string_view kInvalidSetSlotOptions = "ERR Invalid setslot options";
constexpr std::string_view kInvalidNodeId = "ERR Invalid node id";
constexpr std::string_view kInvalidMigrateOptions = "ERR Invalid migrate options";
constexpr std::string_view kInvalidImportState = "ERR Invalid import state";

cluster::ClusterState* ClusterxEnabled(CommandContext& ctx) {
  cluster::ClusterState* state = ctx.server.cluster();
  if (state == nullptr) {
    ctx.out.Error(kClusterModeDisabled);
  }
  return state;
}

void Reply(CommandContext& ctx, const storage::Status& s) {
  if (s.ok()) {
    ctx.out.SimpleString("OK");
  } else {
    ReplyStatusError(ctx.out, s);
  }
}

void SetNodeId(CommandContext& ctx) {
  if (auto* state = ClusterxEnabled(ctx)) {
    Reply(ctx, state->SetNodeId(ctx.argv[2]));
  }
}

// CLUSTERX SETNODES <topology> <version> [FORCE]
void SetNodes(CommandContext& ctx) {
  auto* state = ClusterxEnabled(ctx);
  if (state == nullptr) {
    return;
  }
  auto version = ParseInt64(ctx.argv[3]);
  if (!version) {
    ctx.out.Error(kInvalidVersion);
    return;
  }
  bool force = false;
  if (ctx.argv.size() == 5 && EqualsIgnoreCase(ctx.argv[4], "force")) {
    force = true;
  } else if (ctx.argv.size() != 4) {
    ctx.out.Error(kInvalidSetNodesOptions);
    return;
  }
  auto s = state->SetNodes(ctx.argv[2], *version, force);
  if (s.ok()) {
    ctx.server.slot_migrator()->OnTopology();
  }
  Reply(ctx, s);
}

// CLUSTERX SETSLOT <slot|a-b> NODE <node id> <version>
void SetSlot(CommandContext& ctx) {
  auto* state = ClusterxEnabled(ctx);
  if (state == nullptr) {
    return;
  }
  cluster::SlotRange range;
  if (!cluster::ParseSlotArgument(ctx.argv[2], &range)) {
    ctx.out.Error("ERR " + std::string(cluster::kErrSlotRangeInvalid));
    return;
  }
  if (!EqualsIgnoreCase(ctx.argv[3], "node")) {
    ctx.out.Error(kInvalidSetSlotOptions);
    return;
  }
  if (ctx.argv[4].size() != cluster::kNodeIdLen) {
    ctx.out.Error(kInvalidNodeId);
    return;
  }
  auto version = ParseInt64(ctx.argv[5]);
  if (!version) {
    ctx.out.Error(kNotIntegerError);
    return;
  }
  if (*version < 0) {
    ctx.out.Error(kInvalidVersion);
    return;
  }
  Reply(ctx, state->SetSlot({range}, ctx.argv[4], *version));
}

void Version(CommandContext& ctx) {
  if (auto* state = ClusterxEnabled(ctx)) {
    ctx.out.Bulk(std::to_string(state->Snapshot()->version));
  }
}

void MyId(CommandContext& ctx) {
  if (auto* state = ClusterxEnabled(ctx)) {
    const auto view = state->Snapshot();
    if (view->myid.empty()) {
      ctx.out.Error("CLUSTERDOWN " + std::string(cluster::kErrNotInitialized));
      return;
    }
    ctx.out.Bulk(view->myid);
  }
}

void ReplyOutcome(CommandContext& ctx, const std::optional<std::string>& error) {
  if (error) {
    ctx.out.Error(*error);
  } else {
    ctx.out.SimpleString("OK");
  }
}

// CLUSTERX MIGRATE <slot|a-b> <destination node id>: +OK at once, the work runs in the
// background (CLUSTER INFO's migrating_state tells how it ends).
void ClusterxMigrate(CommandContext& ctx) {
  if (ClusterxEnabled(ctx) == nullptr) {
    return;
  }
  if (ctx.argv.size() != 4) {
    ctx.out.Error(kInvalidMigrateOptions);
    return;
  }
  cluster::SlotRange range;
  if (!cluster::ParseSlotArgument(ctx.argv[2], &range)) {
    ctx.out.Error("ERR " + std::string(cluster::kErrSlotRangeInvalid));
    return;
  }
  if (!cluster::ValidNodeId(ctx.argv[3])) {
    ctx.out.Error(kInvalidNodeId);
    return;
  }
  ReplyOutcome(ctx, ctx.server.slot_migrator()->Start(range, std::string(ctx.argv[3])));
}

// CLUSTERX IMPORT <slot|a-b> start|success|fail [version]: sent by a migrating source.
void Import(CommandContext& ctx) {
  if (ClusterxEnabled(ctx) == nullptr) {
    return;
  }
  cluster::SlotRange range;
  if (!cluster::ParseSlotArgument(ctx.argv[2], &range)) {
    ctx.out.Error("ERR " + std::string(cluster::kErrSlotRangeInvalid));
    return;
  }
  std::string what(ctx.argv[3]);
  for (auto& c : what) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  uint64_t version = 0;
  if (what == "success" && ctx.argv.size() == 5) {
    auto v = ParseInt64(ctx.argv[4]);
    if (!v || *v < 0) {
      ctx.out.Error(kInvalidVersion);
      return;
    }
    version = static_cast<uint64_t>(*v);
  } else if (ctx.argv.size() != 4 || (what != "start" && what != "success" && what != "fail")) {
    ctx.out.Error(kInvalidImportState);
    return;
  }
  ReplyOutcome(ctx, ctx.server.slot_migrator()->Import(range, what, version));
}

// CLUSTERX APPLYBATCH <raw write batch>: records of the slots being imported.
void ApplyBatch(CommandContext& ctx) {
  if (ClusterxEnabled(ctx) != nullptr) {
    ReplyOutcome(ctx, ctx.server.slot_migrator()->ApplyBatch(std::string(ctx.argv[2])));
  }
}

void Help(CommandContext& ctx) {
  ReplyHelp(ctx.out, "clusterx",
            {"SETNODEID <node-id>", "    Set this node's id (40 characters of [A-Za-z0-9]).",
             "SETNODES <topology> <version> [FORCE]",
             "    Set the cluster topology: one '<id> <host> <port> master - <slots...>' or "
             "'<id> <host> <port> slave <master-id>' line per node.",
             "SETSLOT <slot|start-end> NODE <node-id> <version>",
             "    Assign slots to a master; version must be the current one + 1.", "VERSION",
             "    Return the topology version (-1: none).", "MYID", "    Return the node id.",
             "MIGRATE <slot|start-end> <node-id>",
             "    Move the slots' data to another master (in the background).",
             "IMPORT <slot|start-end> START|SUCCESS|FAIL [version]",
             "    Between nodes: the state of an import.", "APPLYBATCH <batch>",
             "    Between nodes: a raw write batch of an import."});
}

}  // namespace

CommandSpec ClusterXCommandSpec() {
  CommandSpec x = CommandSpec{
      .name = "clusterx",
      .arity = -2,
      .flags = kLoading | kStale,
      .handler = RunSubcommand,
      .summary = "Kvrocks' cluster topology commands, sent by a controller.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "Depends on subcommand.",
  };  // (as CLUSTER: usable while a replica loads a full sync)
  const uint32_t kSet = kAdmin | kNoScript | kLoading | kStale;
  auto& subs = x.subcommands;
  subs.push_back(CommandSpec{
      .name = "clusterx|setnodeid",
      .arity = 3,
      .flags = kSet,
      .handler = SetNodeId,
      .summary = "Sets this node's id.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .args = {{"node-id", "string", "", false, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|setnodes",
      .arity = -4,
      .flags = kSet,
      .handler = SetNodes,
      .summary = "Sets the cluster topology.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .args = {{"topology", "string", "", false, false},
               {"version", "integer", "", false, false},
               {"force", "pure-token", "FORCE", true, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|setslot",
      .arity = 6,
      .flags = kSet,
      .handler = SetSlot,
      .summary = "Assigns slots to a master.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .args = {{"slot", "string", "", false, false},
               {"node", "pure-token", "NODE", false, false},
               {"node-id", "string", "", false, false},
               {"version", "integer", "", false, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|version",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = Version,
      .summary = "Returns the topology version.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|myid",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = MyId,
      .summary = "Returns this node's id.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|migrate",
      .arity = -4,
      .flags = kSet,
      .handler = ClusterxMigrate,
      .summary = "Moves slots to another master.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .args = {{"slot", "string", "", false, false}, {"node-id", "string", "", false, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|import",
      .arity = -4,
      .flags = kSet,
      .handler = Import,
      .summary = "Between nodes: the state of a slot import.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .args = {{"slot", "string", "", false, false},
               {"state", "string", "", false, false},
               {"version", "integer", "", true, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|applybatch",
      .arity = 3,
      .flags = kAdmin | kNoScript | kWrite,
      .handler = ApplyBatch,
      .summary = "Between nodes: a raw write batch of a slot import.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .args = {{"batch", "string", "", false, false}},
      .acl_categories = {"admin", "slow", "dangerous"},
  });
  subs.push_back(CommandSpec{
      .name = "clusterx|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = Help,
      .summary = "Returns helpful text about the different subcommands.",
      .since = "1.0.0",
      .group = "cluster",
      .complexity = "O(N) where N is the number of nodes",
      .acl_categories = {"slow"},
  });
  return x;
}

}  // namespace cuckood::server

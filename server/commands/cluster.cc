// CLUSTER (Redis 7's client surface of cluster mode), READONLY, READWRITE, ASKING; CLUSTERX
// (the controller's commands) lives in clusterx.cc. The topology is only ever set by CLUSTERX:
// Redis's gossip verbs (MEET, ADDSLOTS, FAILOVER, ...) are refused with a text that says so.
#include "cluster/cluster.h"

#include <array>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/engine.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kInvalidSlot = "ERR Invalid slot";
constexpr std::string_view kInvalidSlotOrCount = "ERR Invalid slot or number of keys";
constexpr std::string_view kResetWithKeys =
    "ERR CLUSTER RESET can't be called with master nodes containing keys";
constexpr std::string_view kNotAMaster = "ERR The specified node is not a master";
constexpr std::array<std::string_view, 14> kGossipVerbs = {"meet",
                                                           "addslots",
                                                           "addslotsrange",
                                                           "delslots",
                                                           "delslotsrange",
                                                           "failover",
                                                           "forget",
                                                           "replicate",
                                                           "setslot",
                                                           "saveconfig",
                                                           "bumpepoch",
                                                           "flushslots",
                                                           "set-config-epoch",
                                                           "count-failure-reports"};

// The cluster state, or null after answering Redis's "cluster support disabled".
cluster::ClusterState* Enabled(CommandContext& ctx) {
  cluster::ClusterState* state = ctx.server.cluster();
  if (state == nullptr) {
    ctx.out.Error(kClusterDisabled);
  }
  return state;
}

// The current view with a topology, or null after answering Kvrocks' CLUSTERDOWN.
std::shared_ptr<const cluster::View> Initialized(CommandContext& ctx) {
  cluster::ClusterState* state = Enabled(ctx);
  if (state == nullptr) {
    return nullptr;
  }
  auto view = state->Snapshot();
  if (!view->topology) {
    ctx.out.Error("CLUSTERDOWN " + std::string(cluster::kErrNotInitialized));
    return nullptr;
  }
  return view;
}

void ClusterInfo(CommandContext& ctx) {
  if (auto view = Initialized(ctx)) {
    ctx.out.Verbatim(cluster::RenderInfo(*view) + ctx.server.cluster()->MigrationInfo());
  }
}

void ClusterNodes(CommandContext& ctx) {
  if (auto view = Initialized(ctx)) {
    ctx.out.Verbatim(cluster::RenderNodes(*view, storage::NowMs()));
  }
}

void WriteNodeAddress(resp::Writer& out, const cluster::Node& node) {
  out.ArrayHeader(4);
  out.Bulk(node.host);
  out.Integer(node.port);
  out.Bulk(node.id);
  out.MapHeader(0);  // Redis 7: hostname and other metadata (none here)
}

void ClusterSlots(CommandContext& ctx) {
  auto view = Initialized(ctx);
  if (!view) {
    return;
  }
  const auto table = cluster::SlotTable(*view);
  ctx.out.ArrayHeader(static_cast<int64_t>(table.size()));
  for (const auto& entry : table) {
    ctx.out.ArrayHeader(static_cast<int64_t>(2 + entry.nodes.size()));
    ctx.out.Integer(entry.range.start);
    ctx.out.Integer(entry.range.end);
    for (const auto* node : entry.nodes) {
      WriteNodeAddress(ctx.out, *node);
    }
  }
}

void WriteShardNode(resp::Writer& out, const cluster::Node& node) {
  out.MapHeader(7);
  out.Bulk("id");
  out.Bulk(node.id);
  out.Bulk("port");
  out.Integer(node.port);
  out.Bulk("ip");
  out.Bulk(node.host);
  out.Bulk("endpoint");
  out.Bulk(node.host);
  out.Bulk("role");
  out.Bulk(node.role == cluster::Role::kMaster ? "master" : "replica");
  out.Bulk("replication-offset");
  out.Integer(0);
  out.Bulk("health");
  out.Bulk("online");
}

void ClusterShards(CommandContext& ctx) {
  auto view = Initialized(ctx);
  if (!view) {
    return;
  }
  const auto shards = cluster::Shards(*view);
  ctx.out.ArrayHeader(static_cast<int64_t>(shards.size()));
  for (const auto& shard : shards) {
    ctx.out.MapHeader(2);
    ctx.out.Bulk("slots");
    ctx.out.ArrayHeader(static_cast<int64_t>(2 * shard.master->slots.size()));
    for (const auto& r : shard.master->slots) {
      ctx.out.Integer(r.start);
      ctx.out.Integer(r.end);
    }
    ctx.out.Bulk("nodes");
    ctx.out.ArrayHeader(static_cast<int64_t>(1 + shard.replicas.size()));
    WriteShardNode(ctx.out, *shard.master);
    for (const auto* replica : shard.replicas) {
      WriteShardNode(ctx.out, *replica);
    }
  }
}

void ClusterReplicas(CommandContext& ctx) {
  auto view = Initialized(ctx);
  if (!view) {
    return;
  }
  const cluster::Node* node = view->topology->Find(ctx.argv[2]);
  if (node == nullptr) {
    ctx.out.Error("ERR Unknown node " + std::string(ctx.argv[2].substr(0, 128)));
    return;
  }
  if (node->role != cluster::Role::kMaster) {
    ctx.out.Error(kNotAMaster);
    return;
  }
  const auto replicas = view->topology->ReplicasOf(node->id);
  const uint64_t now = storage::NowMs();
  ctx.out.ArrayHeader(static_cast<int64_t>(replicas.size()));
  for (const auto* r : replicas) {
    ctx.out.Bulk(cluster::RenderNodeLine(*view, *r, now));
  }
}

void ClusterMyId(CommandContext& ctx) {
  if (auto* state = Enabled(ctx)) {
    const auto view = state->Snapshot();
    if (view->myid.empty()) {
      ctx.out.Error("CLUSTERDOWN " + std::string(cluster::kErrNotInitialized));
      return;
    }
    ctx.out.Bulk(view->myid);
  }
}

void ClusterKeySlot(CommandContext& ctx) {
  if (Enabled(ctx) != nullptr) {
    ctx.out.Integer(cluster::KeySlot(ctx.argv[2]));
  }
}

// A slot argument: Redis's integer text, then its range.
std::optional<uint16_t> SlotArgument(CommandContext& ctx, std::string_view arg,
                                     std::string_view range_error) {
  auto slot = ParseInt64(arg);
  if (!slot) {
    ctx.out.Error(kNotIntegerError);
    return std::nullopt;
  }
  if (*slot < 0 || *slot >= cluster::kSlotCount) {
    ctx.out.Error(range_error);
    return std::nullopt;
  }
  return static_cast<uint16_t>(*slot);
}

void ClusterCountKeysInSlot(CommandContext& ctx) {
  if (Enabled(ctx) == nullptr) {
    return;
  }
  auto slot = SlotArgument(ctx, ctx.argv[2], kInvalidSlot);
  if (!slot) {
    return;
  }
  auto n = ctx.server.db().CountKeysInSlot(ctx.ns, *slot);
  if (!n.ok()) {
    ReplyStatusError(ctx.out, n.status());
    return;
  }
  ctx.out.Integer(static_cast<int64_t>(*n));
}

void ClusterGetKeysInSlot(CommandContext& ctx) {
  if (Enabled(ctx) == nullptr) {
    return;
  }
  auto slot = SlotArgument(ctx, ctx.argv[2], kInvalidSlotOrCount);
  if (!slot) {
    return;
  }
  auto count = ParseInt64(ctx.argv[3]);
  if (!count) {
    ctx.out.Error(kNotIntegerError);
    return;
  }
  if (*count < 0) {
    ctx.out.Error(kInvalidSlotOrCount);
    return;
  }
  auto keys = ctx.server.db().KeysInSlot(ctx.ns, *slot, static_cast<uint64_t>(*count));
  if (!keys.ok()) {
    ReplyStatusError(ctx.out, keys.status());
    return;
  }
  ctx.out.ArrayHeader(static_cast<int64_t>(keys->size()));
  for (const auto& k : *keys) {
    ctx.out.Bulk(k);
  }
}

void ClusterReset(CommandContext& ctx) {
  auto* state = Enabled(ctx);
  if (state == nullptr) {
    return;
  }
  bool hard = false;
  if (ctx.argv.size() > 3) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  if (ctx.argv.size() == 3) {
    if (EqualsIgnoreCase(ctx.argv[2], "hard")) {
      hard = true;
    } else if (!EqualsIgnoreCase(ctx.argv[2], "soft")) {
      ctx.out.Error(kSyntaxError);
      return;
    }
  }
  const auto view = state->Snapshot();
  const cluster::Node* me = view->myself();
  if (me == nullptr || me->role == cluster::Role::kMaster) {
    auto n = ctx.server.db().DbSize(ctx.server.db().Namespace(0));
    if (!n.ok()) {
      ReplyStatusError(ctx.out, n.status());
      return;
    }
    if (*n > 0) {
      ctx.out.Error(kResetWithKeys);
      return;
    }
  }
  if (auto s = state->Reset(hard); !s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("OK");
}

void ClusterGossipVerb(CommandContext& ctx) {
  if (Enabled(ctx) != nullptr) {
    ctx.out.Error("ERR CLUSTER " + ToUpper(ctx.argv[1]) +
                  " is not supported: the topology of this cluster is managed with CLUSTERX "
                  "(e.g. by kvrocks-controller)");
  }
}

void ClusterHelp(CommandContext& ctx) {
  ReplyHelp(ctx.out, "cluster",
            {"INFO",
             "    Return information about the cluster.",
             "NODES",
             "    Return cluster configuration seen by node.",
             "SLOTS",
             "    Return information about slots range mappings.",
             "SHARDS",
             "    Return information about slot range mappings and the nodes serving them.",
             "MYID",
             "    Return the node id.",
             "KEYSLOT <key>",
             "    Return the hash slot for <key>.",
             "COUNTKEYSINSLOT <slot>",
             "    Return the number of keys in <slot>.",
             "GETKEYSINSLOT <slot> <count>",
             "    Return key names stored by current node in a slot.",
             "REPLICAS <node-id>",
             "    Return <node-id> replicas.",
             "RESET [HARD|SOFT]",
             "    Forget the topology (HARD: the node id too). The topology is set by CLUSTERX."});
}

void ReadOnly(CommandContext& ctx) {
  if (Enabled(ctx) != nullptr) {
    ctx.client.cluster_readonly = true;
    ctx.out.SimpleString("OK");
  }
}

void ReadWrite(CommandContext& ctx) {
  if (Enabled(ctx) != nullptr) {
    ctx.client.cluster_readonly = false;
    ctx.out.SimpleString("OK");
  }
}

void Asking(CommandContext& ctx) {
  if (Enabled(ctx) != nullptr) {
    ctx.client.cluster_asking = true;
    ctx.out.SimpleString("OK");
  }
}

CommandSpec ClusterCommandSpec() {
  // The dispatcher checks the container's flags: the controller's probes (CLUSTER INFO) must be
  // answered while a replica loads a full sync, or it counts them as failures.
  CommandSpec cluster = CommandSpec{
      .name = "cluster",
      .arity = -2,
      .flags = kLoading | kStale,
      .handler = RunSubcommand,
      .summary = "A container for Redis Cluster commands.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "Depends on subcommand.",
  };
  auto& subs = cluster.subcommands;
  const uint32_t kInfo = kLoading | kStale;
  subs.push_back(CommandSpec{
      .name = "cluster|info",
      .arity = 2,
      .flags = kInfo,
      .handler = ClusterInfo,
      .summary = "Returns information about the state of a node.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|nodes",
      .arity = 2,
      .flags = kInfo,
      .handler = ClusterNodes,
      .summary = "Returns the cluster configuration for a node.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|slots",
      .arity = 2,
      .flags = kInfo,
      .handler = ClusterSlots,
      .summary = "Returns the mapping of cluster slots to nodes.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|shards",
      .arity = 2,
      .flags = kInfo,
      .handler = ClusterShards,
      .summary = "Returns the mapping of cluster slots to shards.",
      .since = "7.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|myid",
      .arity = 2,
      .flags = kInfo,
      .handler = ClusterMyId,
      .summary = "Returns the ID of a node.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|keyslot",
      .arity = 3,
      .flags = kInfo,
      .handler = ClusterKeySlot,
      .summary = "Returns the hash slot for a key.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .args = {{"key", "string", "", false, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|countkeysinslot",
      .arity = 3,
      .flags = kInfo,
      .handler = ClusterCountKeysInSlot,
      .summary = "Returns the number of keys in a hash slot.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .args = {{"slot", "integer", "", false, false}},
      .acl_categories = {"slow"},
  });
  subs.push_back(CommandSpec{
      .name = "cluster|getkeysinslot",
      .arity = 4,
      .flags = kInfo,
      .handler = ClusterGetKeysInSlot,
      .summary = "Returns the key names in a hash slot.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .args = {{"slot", "integer", "", false, false}, {"count", "integer", "", false, false}},
      .acl_categories = {"slow"},
  });
  for (const char* name : {"cluster|replicas", "cluster|slaves"}) {
    subs.push_back(CommandSpec{
        .name = name,
        .arity = 3,
        .flags = kAdmin | kStale,
        .handler = ClusterReplicas,
        .summary = "Lists the replica nodes of a master node.",
        .since = "5.0.0",
        .group = "cluster",
        .complexity = "O(1)",
        .args = {{"node-id", "string", "", false, false}},
        .acl_categories = {"slow"},
    });
  }
  subs.push_back(CommandSpec{
      .name = "cluster|reset",
      .arity = -2,
      .flags = kAdmin | kStale | kNoScript,
      .handler = ClusterReset,
      .summary = "Resets a node.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .args = {{"reset-type", "oneof", "HARD|SOFT", true, false}},
      .acl_categories = {"slow"},
  });
  for (auto verb : kGossipVerbs) {
    subs.push_back(CommandSpec{
        .name = "cluster|" + std::string(verb),
        .arity = -2,
        .flags = kAdmin | kStale | kNoScript,
        .handler = ClusterGossipVerb,
        .summary = "Refused: the topology is managed with CLUSTERX (kvrocks-controller).",
        .since = "3.0.0",
        .group = "cluster",
        .complexity = "O(1)",
        .acl_categories = {"slow"},
    });
  }
  subs.push_back(CommandSpec{
      .name = "cluster|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = ClusterHelp,
      .summary = "Returns helpful text about the different subcommands.",
      .since = "5.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  return cluster;
}

}  // namespace

void RegisterClusterCommands(CommandTable& table) {
  table.Add(ClusterCommandSpec());
  table.Add(ClusterXCommandSpec());
  CommandSpec readonly = CommandSpec{
      .name = "readonly",
      .arity = 1,
      .flags = kFast | kLoading | kStale,
      .handler = ReadOnly,
      .summary = "Enables read-only queries for a connection to a Redis Cluster replica node.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"fast", "connection"},
  };
  table.Add(readonly);
  CommandSpec readwrite = CommandSpec{
      .name = "readwrite",
      .arity = 1,
      .flags = kFast | kLoading | kStale,
      .handler = ReadWrite,
      .summary = "Enables read-write queries for a connection to a Redis Cluster replica node.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"fast", "connection"},
  };
  table.Add(readwrite);
  CommandSpec asking = CommandSpec{
      .name = "asking",
      .arity = 1,
      .flags = kFast,
      .handler = Asking,
      .summary = "Signals that a cluster client is following an -ASK redirect.",
      .since = "3.0.0",
      .group = "cluster",
      .complexity = "O(1)",
      .acl_categories = {"fast", "connection"},
  };
  table.Add(asking);
}

}  // namespace cuckood::server

// Replication commands: REPLICAOF / SLAVEOF, ROLE, WAIT, and the two a replica sends its primary
// (REPLCONF, REPLSYNC; see replication/primary.h for the exchange that follows).
#include "server/replication.h"

#include "replication/link.h"
#include "server/commands/family.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kReplicaOfInClusterMode = "ERR REPLICAOF not allowed in cluster mode.";
constexpr std::string_view kInvalidPort = "ERR Invalid master port";
constexpr std::string_view kAlreadyConnected = "OK Already connected to specified master";
constexpr std::string_view kWaitOnReplica =
    "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a "
    "replica is configured to be writable (which is not the default) writes to replicas are just "
    "local and are not propagated.";
constexpr std::string_view kReplSyncOverTls =
    "ERR replication over a TLS connection is not supported: replicas connect to the plain port";
constexpr std::string_view kReplSyncSyntax =
    "ERR REPLSYNC <protocol version> <replid|?> <sequence>";

void ReplicaOfCommand(CommandContext& ctx) {
  if (ctx.server.live_config().Get().cluster_enabled) {
    // (the pushed topology decides a cluster node's role: server/cluster_mode.h)
    ctx.out.Error(kReplicaOfInClusterMode);
    return;
  }
  if (EqualsIgnoreCase(ctx.argv[1], "no") && EqualsIgnoreCase(ctx.argv[2], "one")) {
    if (auto s = ctx.server.replication().PromoteToPrimary(); !s.ok()) {
      ctx.out.Error("ERR " + s.message());
      return;
    }
    ctx.server.live_config().Update([](Config& c) { c.replicaof.clear(); });
    ctx.out.SimpleString("OK");
    return;
  }
  auto port = ParseInt64(ctx.argv[2]);
  if (!port || *port < 0 || *port > 65535) {
    ctx.out.Error(kInvalidPort);
    return;
  }
  const std::string host(ctx.argv[1]);
  bool already = false;
  if (auto s = ctx.server.replication().ReplicaOf(host, static_cast<int>(*port), &already);
      !s.ok()) {
    ctx.out.Error("ERR " + s.message());
    return;
  }
  ctx.server.live_config().Update(
      [&](Config& c) { c.replicaof = host + " " + std::to_string(*port); });
  ctx.out.SimpleString(already ? kAlreadyConnected : "OK");
}

void RoleCommand(CommandContext& ctx) {
  ctx.server.replication().WriteRole(ctx.out);
}

// WAIT numreplicas timeout: replicas that acknowledged every write stored before the call.
// (Runs on the background pool: it may wait.)
void WaitCommand(CommandContext& ctx) {
  auto timeout = ParseInt64(ctx.argv[2]);
  if (!timeout) {
    ctx.out.Error("ERR timeout is not an integer or out of range");
    return;
  }
  if (*timeout < 0) {
    ctx.out.Error("ERR timeout is negative");
    return;
  }
  auto n = ParseInt64(ctx.argv[1]);
  if (!n) {
    ctx.out.Error(kNotIntegerError);
    return;
  }
  auto& repl = ctx.server.replication();
  if (repl.is_replica()) {
    ctx.out.Error(kWaitOnReplica);
    return;
  }
  ctx.server.engine().Settle();
  const uint64_t seq = ctx.server.engine().LatestSequence();
  const int want = static_cast<int>(std::clamp<int64_t>(*n, 0, 1 << 20));
  ctx.out.Integer(repl.WaitForReplicas(want, seq, *timeout));
}

// REPLCONF <option> <value> ...: what a replica tells its primary before REPLSYNC.
void ReplConfCommand(CommandContext& ctx) {
  if (ctx.argv.size() % 2 != 1) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  for (size_t i = 1; i < ctx.argv.size(); i += 2) {
    const auto opt = ctx.argv[i];
    const auto val = ctx.argv[i + 1];
    if (EqualsIgnoreCase(opt, "listening-port")) {
      auto p = ParseInt64(val);
      if (!p || *p < 0 || *p > 65535) {
        ctx.out.Error(kNotIntegerError);
        return;
      }
      ctx.client.repl_listening_port = static_cast<int>(*p);
    } else if (EqualsIgnoreCase(opt, "ip-address")) {
      if (val.size() > 255) {
        ctx.out.Error("ERR REPLCONF ip-address provided by replica instance is too long: " +
                      std::to_string(val.size()) + " bytes");
        return;
      }
      ctx.client.repl_ip = std::string(val);
    } else if (EqualsIgnoreCase(opt, "capa") || EqualsIgnoreCase(opt, "rdb-only") ||
               EqualsIgnoreCase(opt, "rdb-filter-only")) {
      // (nothing to record)
    } else if (EqualsIgnoreCase(opt, "ack") || EqualsIgnoreCase(opt, "getack")) {
      return;  // (no reply, as Redis; acknowledgements travel on the replication link)
    } else {
      ctx.out.Error("ERR Unrecognized REPLCONF option: " + std::string(opt.substr(0, 128)));
      return;
    }
  }
  ctx.out.SimpleString("OK");
}

// REPLSYNC <protocol version> <replid|?> <sequence>: the connection becomes a replication link.
void ReplSyncCommand(CommandContext& ctx) {
  uint64_t version = 0;
  uint64_t seq = 0;
  if (!replication::ParseU64(ctx.argv[1], &version) || !replication::ParseU64(ctx.argv[3], &seq) ||
      ctx.argv[2].size() > 64) {
    ctx.out.Error(kReplSyncSyntax);
    return;
  }
  if (ctx.client.tls) {
    ctx.out.Error(kReplSyncOverTls);
    return;
  }
  replication::SyncRequest req;
  req.version = static_cast<int>(std::min<uint64_t>(version, 1 << 20));
  req.replid = std::string(ctx.argv[2]);
  req.seq = seq;
  req.port = ctx.client.repl_listening_port;
  req.ip = ctx.client.repl_ip;
  if (req.ip.empty()) {
    req.ip = ctx.client.addr.substr(0, ctx.client.addr.rfind(':'));
  }
  Replication* repl = &ctx.server.replication();
  ctx.client.take_socket = [repl, req = std::move(req)](int fd) mutable {
    repl->ServeReplica(fd, std::move(req));
  };
  ctx.NothingModified();
}

}  // namespace

void RegisterReplicationCommands(CommandTable& table) {
  const uint32_t kRepl = kAdmin | kNoScript | kStale | kLoading;  // (a sync may be abandoned)
  const std::vector<CommandArgDoc> of = {{"host", "string", "", false, false},
                                         {"port", "integer", "", false, false}};
  table.Add(CommandSpec{
      .name = "replicaof",
      .arity = 3,
      .flags = kRepl,
      .handler = ReplicaOfCommand,
      .summary = "Configure a server as replica of another, or promote it to a master.",
      .since = "5.0.0",
      .group = "server",
      .complexity = "O(1)",
      .args = of,
      .acl_categories = {"admin", "slow", "dangerous"},
  });
  table.Add(CommandSpec{
      .name = "slaveof",
      .arity = 3,
      .flags = kRepl,
      .handler = ReplicaOfCommand,
      .summary = "Sets a Redis server as a replica of another, or promotes it to being a master.",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
      .args = of,
      .acl_categories = {"admin", "slow", "dangerous"},
  });
  table.Add(CommandSpec{
      .name = "role",
      .arity = 1,
      .flags = kNoScript | kLoading | kStale | kFast,
      .handler = RoleCommand,
      .summary = "Return the role of the instance in the context of replication",
      .since = "2.8.12",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"admin", "fast", "dangerous"},
  });
  table.Add(CommandSpec{
      .name = "wait",
      .arity = 3,
      .flags = kNoScript | kBackground,
      .handler = WaitCommand,
      .summary = "Wait for the synchronous replication of all the write commands sent in the "
                 "context of the current connection",
      .since = "3.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"numreplicas", "integer", "", false, false},
               {"timeout", "integer", "", false, false}},
      .acl_categories = {"slow", "connection"},
      .tips = {"request_policy:all_shards", "response_policy:agg_min"},
  });
  table.Add(CommandSpec{
      .name = "replconf",
      .arity = -1,
      .flags = kAdmin | kNoScript | kLoading | kStale,
      .handler = ReplConfCommand,
      .summary = "An internal command for configuring the replication stream.",
      .since = "3.0.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"admin", "slow", "dangerous"},
  });
  table.Add(CommandSpec{
      .name = "replsync",
      .arity = 4,
      .flags = kAdmin | kNoScript | kStale,
      .handler = ReplSyncCommand,
      .summary = "An internal command: a replica asks for the write batches after a sequence.",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"admin", "slow", "dangerous"},
  });
}

}  // namespace cuckood::server

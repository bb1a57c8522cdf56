// DEBUG RELOAD, OBJECT, SLEEP, HELP; who may run them is the enable-debug-command option.
//
// DEBUG RELOAD flushes and closes RocksDB, drops the in-memory caches and opens the database
// again (Server::ReopenDatabase). It parks every io thread, so the connection runs it on the
// background pool (RunsInBackground in command.cc). A reopen keeps the RocksDB sequence, so a
// primary's replicas simply reconnect and continue; a replica refuses it, because its
// replication link applies batches on a thread of its own that a reopen does not hold still.
#include <asio.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/replication.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/db.h"

namespace cuckood::server {

namespace {

constexpr std::string_view kDebugNotAllowed =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.";
constexpr std::string_view kNotAFloat = "ERR value is not a valid float";
constexpr std::string_view kReloadOnReplica = "ERR DEBUG RELOAD is not allowed on a replica";
constexpr std::string_view kReloadInline =
    "ERR DEBUG RELOAD cannot run inside MULTI (it reopens the database)";
constexpr std::string_view kReloadFailed = "ERR Error trying to reload the database: ";

// Whether the client connects from this host (loopback address).
bool IsLocalClient(const Client& client) {
  const auto colon = client.addr.rfind(':');
  if (colon == std::string::npos) {
    return false;
  }
  asio::error_code ec;
  auto address = asio::ip::make_address(client.addr.substr(0, colon), ec);
  return !ec && address.is_loopback();
}

bool DebugAllowed(CommandContext& ctx) {
  const std::string mode = ctx.server.live_config().Get().enable_debug_command;
  return mode == "yes" || (mode == "local" && IsLocalClient(ctx.client));
}

void DebugSleep(CommandContext& ctx) {
  auto secs = ParseDouble(ctx.argv[2]);
  if (!secs) {
    ctx.out.Error(kNotAFloat);
    return;
  }
  // Blocks this connection's io thread, as Redis blocks its server.
  if (*secs > 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(*secs * 1e6)));
  }
  ctx.out.SimpleString("OK");
}

void DebugReload(CommandContext& ctx) {
  if (!ctx.server.background().pool().get_executor().running_in_this_thread()) {
    ctx.out.Error(kReloadInline);  // (an io thread cannot park itself)
    return;
  }
  if (ctx.server.replication().is_replica()) {
    ctx.out.Error(kReloadOnReplica);
    return;
  }
  // One reload at a time: two reopeners parking the io threads at once could each hold some.
  static std::mutex reload_mu;
  std::lock_guard lock(reload_mu);
  // The replication senders read the WAL on threads of their own: they stop, and the replicas
  // continue from the same sequence once they reconnect.
  ctx.server.replication().StopReplicas();
  std::atomic<bool> cancel{false};
  // ReopenDatabase waits for the background pool to be idle: this command is not counted while
  // it waits.
  ctx.server.background().End();
  auto s = ctx.server.ReopenDatabase(nullptr, cancel);
  ctx.server.background().Begin();
  if (!s.ok()) {
    ctx.out.Error(std::string(kReloadFailed) + s.message());
    return;
  }
  ctx.out.SimpleString("OK");
}

// Redis's line, with cuckood's values: the key's version stands for the value's address, the
// serialized length is the bytes the key takes in RocksDB, and no access clock is kept.
void DebugObject(CommandContext& ctx) {
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[2]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  if (!m->has_value()) {
    ctx.out.Error(kNoSuchKeyError);
    return;
  }
  const storage::Metadata& meta = **m;
  uint64_t length = meta.value.size();
  if (meta.type != storage::KeyType::kString) {
    auto usage = ctx.server.db().DiskUsage(ctx.scope, ctx.ns, ctx.argv[2]);
    if (!usage.ok()) {
      ReplyStatusError(ctx.out, usage.status());
      return;
    }
    length = *usage;
  }
  const auto now_s = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  char line[256];
  std::snprintf(line, sizeof(line),
                "Value at:0x%" PRIx64 " refcount:%" PRId64 " encoding:%s serializedlength:%" PRIu64
                " lru:%" PRId64 " lru_seconds_idle:0",
                meta.version, ObjectRefcount(meta), std::string(ObjectEncoding(meta)).c_str(),
                length, static_cast<int64_t>(now_s & ((1 << 24) - 1)));
  ctx.out.SimpleString(line);
}

void DebugCommand(CommandContext& ctx) {
  if (!DebugAllowed(ctx)) {
    ctx.out.Error(kDebugNotAllowed);
    return;
  }
  const auto sub = ctx.argv[1];
  const size_t argc = ctx.argv.size();
  if (EqualsIgnoreCase(sub, "sleep") && argc == 3) {
    DebugSleep(ctx);
  } else if (EqualsIgnoreCase(sub, "reload") && argc == 2) {
    DebugReload(ctx);
  } else if (EqualsIgnoreCase(sub, "object") && argc == 3) {
    DebugObject(ctx);
  } else if (EqualsIgnoreCase(sub, "help") && argc == 2) {
    ReplyHelp(ctx.out, "DEBUG",
              {"OBJECT <key>", "    Show low level info about `key` and associated value.",
               "RELOAD", "    Flush and close the database, drop the caches and open it again.",
               "SLEEP <seconds>", "    Stop the server for <seconds>. Decimals allowed."});
  } else {
    ReplySubcommandSyntaxError(ctx);
  }
}

}  // namespace

CommandSpec DebugCommandSpec() {
  CommandSpec s = CommandSpec{
      .name = "debug",
      .arity = -2,
      .flags = kAdmin | kNoScript | kLoading | kStale,
      .handler = DebugCommand,
      .summary = "A container for debugging commands",
      .since = "1.0.0",
      .group = "server",
      .complexity = "Depends on subcommand.",
  };
  return s;
}

}  // namespace cuckood::server

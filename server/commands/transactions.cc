// MULTI / EXEC / DISCARD / WATCH / UNWATCH. EXEC takes the stripes of every key the queued
// commands touch (all stripes if one of them is FLUSHDB/FLUSHALL) and runs them back to back,
// so no other writer interleaves; WATCH compares per-stripe modification counters.
#include "server/command.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

void ResetMulti(Server& server, Client& c) {
  c.in_multi = false;
  c.multi_dirty = false;
  c.queued.clear();
  server.watches().UnwatchAll(c);
}

void Multi(CommandContext& ctx) {
  if (ctx.client.in_multi) {
    ctx.out.Error("ERR MULTI calls can not be nested");
    return;
  }
  ctx.client.in_multi = true;
  ctx.client.multi_dirty = false;
  ctx.client.queued.clear();
  ctx.out.SimpleString("OK");
}

void Discard(CommandContext& ctx) {
  if (!ctx.client.in_multi) {
    ctx.out.Error("ERR DISCARD without MULTI");
    return;
  }
  ResetMulti(ctx.server, ctx.client);
  ctx.out.SimpleString("OK");
}

void Exec(CommandContext& ctx) {
  Client& c = ctx.client;
  if (!c.in_multi) {
    ctx.out.Error("ERR EXEC without MULTI");
    return;
  }
  if (c.multi_dirty) {
    ResetMulti(ctx.server, c);
    ctx.out.Error("EXECABORT Transaction discarded because of previous errors.");
    return;
  }
  auto queued = std::move(c.queued);
  auto watched = c.watched;
  Server& srv = ctx.server;
  struct UnwatchOnExit {
    Server& server;
    Client& client;
    ~UnwatchOnExit() { server.watches().UnwatchAll(client); }
  } unwatch_at_end{srv, c};
  c.in_multi = false;
  c.multi_dirty = false;
  c.queued.clear();
  Server& server = ctx.server;
  auto& locks = server.db().locks();
  std::vector<size_t> stripes;
  std::vector<const CommandSpec*> specs;
  std::vector<Argv> argvs;
  bool lock_all = false;
  for (const auto& cmd : queued) {
    Argv argv(cmd.begin(), cmd.end());
    const CommandSpec* spec = server.commands().Find(argv[0]);
    specs.push_back(spec);
    if (spec != nullptr) {
      // Readers too: EXEC holds every key its commands touch, exclusively.
      lock_all |= (spec->flags & kLockAll) != 0;
      for (auto key : CommandKeys(*spec, argv)) {
        stripes.push_back(locks.StripeOf(c.db, key));
      }
      if (auto other = CommandOtherDbKey(*spec, argv)) {
        stripes.push_back(locks.StripeOf(other->db, other->key));
      }
    }
    argvs.push_back(std::move(argv));
  }
  if (lock_all) {
    stripes.resize(locks.stripes());
    for (size_t i = 0; i < stripes.size(); ++i) {
      stripes[i] = i;
    }
  }
  for (const auto& [id, version] : watched) {
    const uint16_t db =
        static_cast<uint16_t>((static_cast<uint8_t>(id[0]) << 8) | static_cast<uint8_t>(id[1]));
    stripes.push_back(locks.StripeOf(db, std::string_view(id).substr(2)));
  }
  storage::LockGuard guard(&locks, stripes);
  for (const auto& [id, version] : watched) {
    if (server.watches().Version(id) != version) {
      ctx.out.NullArray();
      return;
    }
  }
  ctx.out.ArrayHeader(static_cast<int64_t>(queued.size()));
  for (size_t i = 0; i < queued.size(); ++i) {
    if (specs[i] == nullptr) {
      ctx.out.Error("ERR command not found");
      continue;
    }
    server.dispatcher().Execute(*specs[i], c, argvs[i], ctx.out, /*locks_held=*/true);
  }
}

void Watch(CommandContext& ctx) {
  if (ctx.client.in_multi) {
    ctx.out.Error("ERR WATCH inside MULTI is not allowed");
    return;
  }
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    uint64_t version = ctx.server.watches().Watch(ctx.client.db, ctx.argv[i]);
    ctx.client.watched.emplace_back(WatchRegistry::Id(ctx.client.db, ctx.argv[i]), version);
  }
  ctx.out.SimpleString("OK");
}

void Unwatch(CommandContext& ctx) {
  ctx.server.watches().UnwatchAll(ctx.client);
  ctx.out.SimpleString("OK");
}

}  // namespace

void RegisterTransactionCommands(CommandTable& table) {
  const uint32_t kTx = kNoMulti | kNoScript | kLoading | kStale | kFast;
  table.Add(CommandSpec{
      .name = "multi",
      .arity = 1,
      .flags = kTx,
      .handler = Multi,
      .summary = "Starts a transaction.",
      .since = "1.2.0",
      .group = "transactions",
      .complexity = "O(1)",
      .acl_categories = {"fast", "transaction"},
  });
  CommandSpec exec = CommandSpec{
      .name = "exec",
      .arity = 1,
      .flags = kNoMulti | kNoScript | kLoading | kStale | kSkipSlowlog,
      .handler = Exec,
      .summary = "Executes all commands in a transaction.",
      .since = "1.2.0",
      .group = "transactions",
      .complexity = "Depends on commands in the transaction",
      .acl_categories = {"slow", "transaction"},
  };
  table.Add(exec);
  table.Add(CommandSpec{
      .name = "discard",
      .arity = 1,
      .flags = kTx,
      .handler = Discard,
      .summary = "Discards a transaction.",
      .since = "1.2.0",
      .group = "transactions",
      .complexity = "O(1)",
      .acl_categories = {"fast", "transaction"},
  });
  CommandSpec watch = CommandSpec{
      .name = "watch",
      .arity = -2,
      .flags = kTx,
      .first_key = 1,
      .last_key = -1,
      .step = 1,
      .handler = Watch,
      .summary = "Monitors changes to keys to determine the execution of a transaction.",
      .since = "2.2.0",
      .group = "transactions",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, true}},
      .acl_categories = {"fast", "transaction"},
  };
  table.Add(watch);
  CommandSpec unwatch = CommandSpec{
      .name = "unwatch",
      .arity = 1,
      .flags = kTx,
      .handler = Unwatch,
      .summary = "Forgets about watched keys of a transaction.",
      .since = "2.2.0",
      .group = "transactions",
      .complexity = "O(1)",
      .acl_categories = {"fast", "transaction"},
  };
  table.Add(unwatch);
}

}  // namespace cuckood::server

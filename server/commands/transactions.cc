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

CommandSpec Row(std::string name, int arity, uint32_t flags, Handler h, std::string summary,
                int first_key = 0, int last_key = 0) {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = arity;
  s.flags = flags;
  s.first_key = first_key;
  s.last_key = last_key;
  s.step = first_key > 0 ? 1 : 0;
  s.handler = h;
  s.summary = std::move(summary);
  s.since = "1.2.0";
  s.group = "transactions";
  s.complexity = "O(1)";
  s.acl_categories = {"fast", "transaction"};
  return s;
}

}  // namespace

void RegisterTransactionCommands(CommandTable& table) {
  const uint32_t kTx = kNoMulti | kNoScript | kLoading | kStale | kFast;
  table.Add(Row("multi", 1, kTx, Multi, "Starts a transaction."));
  auto exec = Row("exec", 1, kNoMulti | kNoScript | kLoading | kStale | kSkipSlowlog, Exec,
                  "Executes all commands in a transaction.");
  exec.complexity = "Depends on commands in the transaction";
  exec.acl_categories = {"slow", "transaction"};
  table.Add(exec);
  table.Add(Row("discard", 1, kTx, Discard, "Discards a transaction."));
  auto watch = Row("watch", -2, kTx, Watch,
                   "Monitors changes to keys to determine the execution of a transaction.", 1, -1);
  watch.since = "2.2.0";
  watch.args = {{"key", "key", "", false, true}};
  table.Add(watch);
  auto unwatch = Row("unwatch", 1, kTx, Unwatch, "Forgets about watched keys of a transaction.");
  unwatch.since = "2.2.0";
  table.Add(unwatch);
}

}  // namespace cuckood::server

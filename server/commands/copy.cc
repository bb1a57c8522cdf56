// COPY, MOVE and SWAPDB: a key copied (to another name or database), moved to another database,
// and two databases swapped.
//
// Replies and error texts follow Redis 7.0, checked in the order it checks them. RedisBloom
// refuses to COPY its filters; here a filter is copied like any value (storage::Db::Copy writes
// its pages in bounded batches, the metadata last). COPY and MOVE write a key of another database
// (kOtherDbKeys): the dispatcher takes that key's stripe with the others. SWAPDB holds every
// stripe (kLockAll) and swaps the namespaces the two databases are stored under, not their data.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {

namespace {

// Redis's getIntFromObjectOrReply: an integer that fits in an int. Otherwise `error` when one is
// given, else Redis's two errors (not an integer / outside an int).
std::optional<int64_t> ParseDbIndex(CommandContext& ctx, std::string_view arg,
                                    std::string_view error = {}) {
  auto id = ParseInt64(arg);
  if (!id || *id < INT32_MIN || *id > INT32_MAX) {
    if (!error.empty()) {
      ctx.out.Error(error);
    } else if (!id) {
      ctx.out.Error(kNotIntegerError);
    } else {
      ctx.out.Error("ERR value is out of range, value must between -2147483648 and 2147483647");
    }
    return std::nullopt;
  }
  return id;
}

bool DbInRange(CommandContext& ctx, int64_t id) {
  return id >= 0 && id < ctx.server.live_config().Get().databases && id <= UINT16_MAX;
}

// COPY source destination [DB destination-db] [REPLACE]
void CopyCommand(CommandContext& ctx) {
  ctx.NothingModified();
  const Argv& argv = ctx.argv;
  uint16_t dst_db = ctx.client.db;
  bool replace = false;
  for (size_t i = 3; i < argv.size(); ++i) {
    if (EqualsIgnoreCase(argv[i], "replace")) {
      replace = true;
    } else if (EqualsIgnoreCase(argv[i], "db") && i + 1 < argv.size()) {
      auto id = ParseDbIndex(ctx, argv[++i]);
      if (!id) {
        return;
      }
      if (!DbInRange(ctx, *id)) {
        ctx.out.Error(kDbOutOfRange);
        return;
      }
      dst_db = static_cast<uint16_t>(*id);
    } else {
      ctx.out.Error(kSyntaxError);
      return;
    }
  }
  if (ctx.server.cluster() != nullptr && (ctx.client.db != 0 || dst_db != 0)) {
    ctx.out.Error("ERR Copying to another database is not allowed in cluster mode");
    return;
  }
  if (dst_db == ctx.client.db && argv[1] == argv[2]) {
    ctx.out.Error(kSameObjectError);
    return;
  }
  auto& db = ctx.server.db();
  auto r = db.Copy(ctx.ns, argv[1], db.Namespace(dst_db), argv[2], replace);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (*r) {
    if (dst_db == ctx.client.db) {
      ctx.Modified(argv[2]);
    } else {
      ctx.server.watches().Touch(dst_db, {argv[2]});
    }
  }
  ctx.out.Integer(*r ? 1 : 0);
}

// MOVE key db
void MoveCommand(CommandContext& ctx) {
  ctx.NothingModified();
  if (ctx.server.cluster() != nullptr) {
    ctx.out.Error("ERR MOVE is not allowed in cluster mode");
    return;
  }
  auto id = ParseDbIndex(ctx, ctx.argv[2]);
  if (!id) {
    return;
  }
  if (!DbInRange(ctx, *id)) {
    ctx.out.Error(kDbOutOfRange);
    return;
  }
  const auto dst_db = static_cast<uint16_t>(*id);
  if (dst_db == ctx.client.db) {
    ctx.out.Error(kSameObjectError);
    return;
  }
  auto& db = ctx.server.db();
  auto r = db.Move(ctx.ns, db.Namespace(dst_db), ctx.argv[1]);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (*r) {
    ctx.Modified(ctx.argv[1]);
    ctx.server.watches().Touch(dst_db, {ctx.argv[1]});
  }
  ctx.out.Integer(*r ? 1 : 0);
}

// SWAPDB index1 index2
void SwapDbCommand(CommandContext& ctx) {
  ctx.NothingModified();
  if (ctx.server.cluster() != nullptr) {
    ctx.out.Error("ERR SWAPDB is not allowed in cluster mode");
    return;
  }
  auto a = ParseDbIndex(ctx, ctx.argv[1], "ERR invalid first DB index");
  if (!a) {
    return;
  }
  auto b = ParseDbIndex(ctx, ctx.argv[2], "ERR invalid second DB index");
  if (!b) {
    return;
  }
  if (!DbInRange(ctx, *a) || !DbInRange(ctx, *b)) {
    ctx.out.Error(kDbOutOfRange);
    return;
  }
  const auto db_a = static_cast<uint16_t>(*a);
  const auto db_b = static_cast<uint16_t>(*b);
  auto& db = ctx.server.db();
  // As Redis does: a key WATCHed in either database is touched when it exists in either (its
  // value may change or appear); one that exists in neither stays as it was.
  const uint16_t ns_a = db.Namespace(db_a);
  const uint16_t ns_b = db.Namespace(db_b);
  std::vector<std::pair<uint16_t, std::string>> touched;
  for (uint16_t watched_db : {db_a, db_b}) {
    for (auto& key : ctx.server.watches().Keys(watched_db)) {
      bool exists = false;
      for (uint16_t ns : {ns_a, ns_b}) {
        auto r = db.Exists(storage::kAlone, ns, key);
        exists = exists || !r.ok() || *r;  // (an error touches: a false alarm is safe)
      }
      if (exists) {
        touched.emplace_back(watched_db, std::move(key));
      }
    }
    if (db_a == db_b) {
      break;
    }
  }
  auto s = db.SwapDatabases(db_a, db_b);
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  for (const auto& [watched_db, key] : touched) {
    ctx.server.watches().Touch(watched_db, {key});
  }
  ctx.out.SimpleString("OK");
}

}  // namespace

void RegisterCopyCommands(CommandTable& table) {
  // COPY and MOVE of a filter copy its pages: off the io thread.
  table.Add(CommandSpec{
      .name = "copy",
      .arity = -3,
      .flags = kWrite | kDenyOom | kOtherDbKeys | kBackground,
      .first_key = 1,
      .last_key = 2,
      .step = 1,
      .handler = CopyCommand,
      .summary = "Copy a key",
      .since = "6.2.0",
      .group = "generic",
      .complexity =
          "O(N) worst case for collections, where N is the number of nested items. O(1) for "
          "string values.",
      .args = {{"source", "key", "", false, false},
               {"destination", "key", "", false, false},
               {"destination-db", "integer", "DB", true, false},
               {"replace", "pure-token", "REPLACE", true, false}},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "move",
      .arity = 3,
      .flags = kWrite | kFast | kOtherDbKeys | kBackground,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = MoveCommand,
      .summary = "Move a key to another database",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}, {"db", "integer", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "swapdb",
      .arity = 3,
      .flags = kWrite | kFast | kLockAll,
      .handler = SwapDbCommand,
      .summary = "Swaps two Redis databases",
      .since = "4.0.0",
      .group = "server",
      .complexity = "O(N) where N is the count of clients watching or blocking on keys from both "
                    "databases.",
      .args = {{"index1", "integer", "", false, false}, {"index2", "integer", "", false, false}},
      .acl_categories = {"keyspace", "dangerous"},
  });
}

}  // namespace cuckood::server

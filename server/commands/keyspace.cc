// Generic key commands: DEL, UNLINK, EXISTS, TYPE, RENAME(NX), the EXPIRE family, TTL family,
// PERSIST, SCAN, KEYS, RANDOMKEY, DBSIZE, FLUSHDB, FLUSHALL. MEMORY and DISK (memory.cc), OBJECT
// and TOUCH (object.cc), COPY, MOVE and SWAPDB (copy.cc) are registered from here.
//
// Replies and error texts follow Redis 7.0; every key operation goes through storage::Db in the
// namespace of the client's SELECTed database (ctx.ns). Write commands already hold their key
// stripes (the dispatcher takes them from the rows below), so a read-modify-write such as EXPIRE
// ... GT is atomic.
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/slot_migration.h"
#include "server/util.h"

namespace cuckood::server {

namespace {

constexpr std::string_view kInvalidCursor = "ERR invalid cursor";
constexpr std::string_view kNxXxGtLt =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
constexpr std::string_view kGtLt = "ERR GT and LT options at the same time are not compatible";

int64_t NowMillis() {
  return static_cast<int64_t>(storage::NowMs());
}

void CountLookup(CommandContext& ctx, bool hit) {
  if (hit) {
    ctx.server.stats().keyspace_hits++;
  } else {
    ctx.server.stats().keyspace_misses++;
  }
}

// ---- DEL / UNLINK / EXISTS / TYPE ---------------------------------------------------------------

void DelCommand(CommandContext& ctx) {
  ctx.NothingModified();
  int64_t deleted = 0;
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    auto r = ctx.server.db().Delete(ctx.ns, ctx.argv[i]);
    if (!r.ok()) {
      ReplyStatusError(ctx.out, r.status());
      return;
    }
    if (*r) {
      ctx.Modified(ctx.argv[i]);
      ++deleted;
    }
  }
  ctx.out.Integer(deleted);
}

// Counts every argument, so a key named twice counts twice (as Redis does).
void ExistsCommand(CommandContext& ctx) {
  int64_t found = 0;
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    auto r = ctx.server.db().Exists(ctx.scope, ctx.ns, ctx.argv[i]);
    if (!r.ok()) {
      ReplyStatusError(ctx.out, r.status());
      return;
    }
    CountLookup(ctx, *r);
    found += *r ? 1 : 0;
  }
  ctx.out.Integer(found);
}

void TypeCommand(CommandContext& ctx) {
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  CountLookup(ctx, m->has_value());
  ctx.out.SimpleString(m->has_value() ? storage::TypeName((*m)->type) : "none");
}

// ---- RENAME / RENAMENX --------------------------------------------------------------------------

void RenameGeneric(CommandContext& ctx, bool nx) {
  ctx.NothingModified();
  auto r = ctx.server.db().Rename(ctx.ns, ctx.argv[1], ctx.argv[2], nx);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());  // a missing src: kKeyNotFound
    return;
  }
  if (*r && ctx.argv[1] != ctx.argv[2]) {  // (a key renamed to itself is not modified)
    ctx.Modified(ctx.argv[1]);
    ctx.Modified(ctx.argv[2]);
  }
  if (nx) {
    ctx.out.Integer(*r ? 1 : 0);
  } else {
    ctx.out.SimpleString("OK");
  }
}

void RenameCommand(CommandContext& ctx) {
  RenameGeneric(ctx, false);
}
void RenameNxCommand(CommandContext& ctx) {
  RenameGeneric(ctx, true);
}

// ---- EXPIRE family ------------------------------------------------------------------------------

enum ExpireFlag : unsigned { kExpireNx = 1, kExpireXx = 2, kExpireGt = 4, kExpireLt = 8 };

struct ExpireArgs {
  int64_t when_ms = 0;  // absolute unix time in ms (may be in the past or negative)
  unsigned flags = 0;
};

// Options first, then the time, as Redis checks them (so "EXPIRE k abc FOO" names FOO).
bool ParseExpire(CommandContext& ctx, int64_t basetime_ms, bool seconds, ExpireArgs* out) {
  for (size_t i = 3; i < ctx.argv.size(); ++i) {
    const auto opt = ctx.argv[i];
    if (EqualsIgnoreCase(opt, "nx")) {
      out->flags |= kExpireNx;
    } else if (EqualsIgnoreCase(opt, "xx")) {
      out->flags |= kExpireXx;
    } else if (EqualsIgnoreCase(opt, "gt")) {
      out->flags |= kExpireGt;
    } else if (EqualsIgnoreCase(opt, "lt")) {
      out->flags |= kExpireLt;
    } else {
      ctx.out.Error("ERR Unsupported option " + std::string(opt));
      return false;
    }
  }
  if ((out->flags & kExpireNx) && (out->flags & (kExpireXx | kExpireGt | kExpireLt))) {
    ctx.out.Error(kNxXxGtLt);
    return false;
  }
  if ((out->flags & kExpireGt) && (out->flags & kExpireLt)) {
    ctx.out.Error(kGtLt);
    return false;
  }
  auto when = ParseInt64(ctx.argv[2]);
  if (!when) {
    ctx.out.Error(kNotIntegerError);
    return false;
  }
  int64_t ms = *when;
  const std::string invalid = "ERR invalid expire time in '" + ToLower(ctx.argv[0]) + "' command";
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (seconds) {
    if (ms > kMax / 1000 || ms < kMin / 1000) {
      ctx.out.Error(invalid);
      return false;
    }
    ms *= 1000;
  }
  if (ms > kMax - basetime_ms) {
    ctx.out.Error(invalid);
    return false;
  }
  out->when_ms = ms + basetime_ms;
  return true;
}

void ExpireGeneric(CommandContext& ctx, bool relative, bool seconds) {
  ctx.NothingModified();
  const int64_t now = NowMillis();
  ExpireArgs args;
  if (!ParseExpire(ctx, relative ? now : 0, seconds, &args)) {
    return;
  }
  auto& db = ctx.server.db();
  auto m = db.Get(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  if (!m->has_value()) {
    ctx.out.Integer(0);
    return;
  }
  // No expiry counts as an infinite TTL: GT never beats it, LT always does.
  const uint64_t current = (*m)->expire_ms;
  const bool has_ttl = current != 0;
  const int64_t cur = static_cast<int64_t>(current);
  if (((args.flags & kExpireNx) && has_ttl) || ((args.flags & kExpireXx) && !has_ttl) ||
      ((args.flags & kExpireGt) && (!has_ttl || args.when_ms <= cur)) ||
      ((args.flags & kExpireLt) && has_ttl && args.when_ms >= cur)) {
    ctx.out.Integer(0);
    return;
  }
  if (args.when_ms <= now) {
    auto r = db.Expire(ctx.ns, ctx.argv[1]);
    if (!r.ok()) {
      ReplyStatusError(ctx.out, r.status());
      return;
    }
    ctx.Modified(ctx.argv[1]);
    ctx.out.Integer(1);
    return;
  }
  auto r = db.SetExpire(ctx.ns, ctx.argv[1], static_cast<uint64_t>(args.when_ms));
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (*r) {
    ctx.Modified(ctx.argv[1]);
  }
  ctx.out.Integer(*r ? 1 : 0);
}

void ExpireCommand(CommandContext& ctx) {
  ExpireGeneric(ctx, true, true);
}
void PExpireCommand(CommandContext& ctx) {
  ExpireGeneric(ctx, true, false);
}
void ExpireAtCommand(CommandContext& ctx) {
  ExpireGeneric(ctx, false, true);
}
void PExpireAtCommand(CommandContext& ctx) {
  ExpireGeneric(ctx, false, false);
}

// TTL (ms = false, absolute = false), PTTL, EXPIRETIME, PEXPIRETIME: -2 missing, -1 no expiry;
// seconds are rounded to the nearest, as Redis does.
void TtlGeneric(CommandContext& ctx, bool ms, bool absolute) {
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  CountLookup(ctx, m->has_value());
  if (!m->has_value()) {
    ctx.out.Integer(-2);
    return;
  }
  const int64_t expire = static_cast<int64_t>((*m)->expire_ms);
  if (expire == 0) {
    ctx.out.Integer(-1);
    return;
  }
  int64_t ttl = absolute ? expire : expire - NowMillis();
  if (ttl < 0) {
    ttl = 0;
  }
  ctx.out.Integer(ms ? ttl : (ttl + 500) / 1000);
}

void TtlCommand(CommandContext& ctx) {
  TtlGeneric(ctx, false, false);
}
void PTtlCommand(CommandContext& ctx) {
  TtlGeneric(ctx, true, false);
}
void ExpireTimeCommand(CommandContext& ctx) {
  TtlGeneric(ctx, false, true);
}
void PExpireTimeCommand(CommandContext& ctx) {
  TtlGeneric(ctx, true, true);
}

void PersistCommand(CommandContext& ctx) {
  ctx.NothingModified();
  auto& db = ctx.server.db();
  auto m = db.Get(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  if (!m->has_value() || (*m)->expire_ms == 0) {
    ctx.out.Integer(0);
    return;
  }
  auto r = db.SetExpire(ctx.ns, ctx.argv[1], 0);
  if (!r.ok()) {
    ReplyStatusError(ctx.out, r.status());
    return;
  }
  if (*r) {
    ctx.Modified(ctx.argv[1]);
  }
  ctx.out.Integer(*r ? 1 : 0);
}

// ---- SCAN / KEYS / RANDOMKEY / DBSIZE -----------------------------------------------------------

struct ScanArgs {
  uint64_t cursor = 0;
  std::string pattern;  // empty = every key
  uint64_t count = 10;
  std::string type;  // empty = any type
};

// Redis reads the cursor with strtoul: an unsigned 64-bit number, leading '+'/'-' accepted
// ("-1" wraps), no leading space, nothing after the digits.
bool ParseCursor(std::string_view text, uint64_t* cursor) {
  const std::string s(text);
  if (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  char* end = nullptr;
  errno = 0;
  *cursor = std::strtoull(s.c_str(), &end, 10);
  return *end == '\0' && errno != ERANGE;
}

bool ParseScan(CommandContext& ctx, ScanArgs* out) {
  if (!ParseCursor(ctx.argv[1], &out->cursor)) {
    ctx.out.Error(kInvalidCursor);
    return false;
  }
  for (size_t i = 2; i < ctx.argv.size(); i += 2) {
    const auto opt = ctx.argv[i];
    if (i + 1 >= ctx.argv.size()) {
      ctx.out.Error(kSyntaxError);
      return false;
    }
    const auto value = ctx.argv[i + 1];
    if (EqualsIgnoreCase(opt, "count")) {
      auto n = ParseInt64(value);
      if (!n) {
        ctx.out.Error(kNotIntegerError);
        return false;
      }
      if (*n < 1) {
        ctx.out.Error(kSyntaxError);
        return false;
      }
      out->count = static_cast<uint64_t>(*n);
    } else if (EqualsIgnoreCase(opt, "match")) {
      out->pattern = value == "*" ? "" : std::string(value);
    } else if (EqualsIgnoreCase(opt, "type")) {
      out->type = std::string(value);
    } else {
      ctx.out.Error(kSyntaxError);
      return false;
    }
  }
  return true;
}

void ScanCommand(CommandContext& ctx) {
  ScanArgs args;
  if (!ParseScan(ctx, &args)) {
    return;
  }
  auto page = ctx.server.db().Scan(ctx.ns, args.cursor, args.pattern, args.count, args.type);
  if (!page.ok()) {
    ReplyStatusError(ctx.out, page.status());
    return;
  }
  ctx.out.ArrayHeader(2);
  ctx.out.Bulk(std::to_string(page->cursor));
  ctx.out.ArrayHeader(static_cast<int64_t>(page->keys.size()));
  for (const auto& k : page->keys) {
    ctx.out.Bulk(k);
  }
}

void KeysCommand(CommandContext& ctx) {
  auto keys = ctx.server.db().Keys(ctx.ns, ctx.argv[1]);
  if (!keys.ok()) {
    ReplyStatusError(ctx.out, keys.status());
    return;
  }
  ctx.out.ArrayHeader(static_cast<int64_t>(keys->size()));
  for (const auto& k : *keys) {
    ctx.out.Bulk(k);
  }
}

void RandomKeyCommand(CommandContext& ctx) {
  auto key = ctx.server.db().RandomKey(ctx.ns);
  if (!key.ok()) {
    ReplyStatusError(ctx.out, key.status());
    return;
  }
  if (key->has_value()) {
    ctx.out.Bulk(**key);
  } else {
    ctx.out.Null();
  }
}

void DbSizeCommand(CommandContext& ctx) {
  auto n = ctx.server.db().DbSize(ctx.ns);
  if (!n.ok()) {
    ReplyStatusError(ctx.out, n.status());
    return;
  }
  ctx.out.Integer(static_cast<int64_t>(*n));
}

// ---- FLUSHDB / FLUSHALL -------------------------------------------------------------------------

// [ASYNC|SYNC]: both are accepted and mean the same here (a flush is a range delete, O(1)).
bool ParseFlushMode(CommandContext& ctx) {
  if (ctx.argv.size() > 2 || (ctx.argv.size() == 2 && !EqualsIgnoreCase(ctx.argv[1], "sync") &&
                              !EqualsIgnoreCase(ctx.argv[1], "async"))) {
    ctx.out.Error(kSyntaxError);
    return false;
  }
  return true;
}

void FlushGeneric(CommandContext& ctx, bool all) {
  if (!ParseFlushMode(ctx)) {
    return;
  }
  if (ctx.server.slot_migrator() != nullptr && ctx.server.slot_migrator()->Busy()) {
    ctx.out.Error("ERR Can't flush the database while slots are being migrated");
    return;
  }
  auto& db = ctx.server.db();
  auto s = all ? db.FlushAll() : db.FlushDb(ctx.ns);
  // WATCHed keys are touched even if the flush failed half-way: a false alarm is safe.
  ctx.server.watches().TouchAll(all ? std::nullopt : std::optional<uint16_t>(ctx.client.db));
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("OK");
}

void FlushDbCommand(CommandContext& ctx) {
  FlushGeneric(ctx, false);
}
void FlushAllCommand(CommandContext& ctx) {
  FlushGeneric(ctx, true);
}

// ---- registration -------------------------------------------------------------------------------

const CommandArgDoc kKeyArg{"key", "key", "", false, false};
const CommandArgDoc kKeysArg{"key", "key", "", false, true};
// "oneof" whose token lists the choices: introspection.cc turns it into pure-token children.
const CommandArgDoc kConditionArg{"condition", "oneof", "NX|XX|GT|LT", true, false};
const CommandArgDoc kFlushArg{"flush-type", "oneof", "ASYNC|SYNC", true, false};

}  // namespace

void RegisterKeyspaceCommands(CommandTable& table) {
  const uint32_t kW = kWrite;
  const uint32_t kR = kReadOnly;
  table.Add(CommandSpec{
      .name = "del",
      .arity = -2,
      .flags = kW,
      .first_key = 1,
      .last_key = -1,
      .step = 1,
      .handler = DelCommand,
      .summary = "Delete a key",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(N) where N is the number of keys that will be removed.",
      .args = {kKeysArg},
      .acl_categories = {"keyspace"},
      .tips = {"request_policy:multi_shard", "response_policy:agg_sum"},
  });
  table.Add(CommandSpec{
      .name = "unlink",
      .arity = -2,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = -1,
      .step = 1,
      .handler = DelCommand,
      .summary = "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but "
                 "non blocking.",
      .since = "4.0.0",
      .group = "generic",
      .complexity = "O(1) for each key removed regardless of its size.",
      .args = {kKeysArg},
      .acl_categories = {"keyspace"},
      .tips = {"request_policy:multi_shard", "response_policy:agg_sum"},
  });
  table.Add(CommandSpec{
      .name = "exists",
      .arity = -2,
      .flags = kR | kFast,
      .first_key = 1,
      .last_key = -1,
      .step = 1,
      .handler = ExistsCommand,
      .summary = "Determine if a key exists",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(N) where N is the number of keys to check.",
      .args = {kKeysArg},
      .acl_categories = {"keyspace"},
      .tips = {"request_policy:multi_shard", "response_policy:agg_sum"},
  });
  table.Add(CommandSpec{
      .name = "type",
      .arity = 2,
      .flags = kR | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = TypeCommand,
      .summary = "Determine the type stored at key",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "rename",
      .arity = 3,
      .flags = kW,
      .first_key = 1,
      .last_key = 2,
      .step = 1,
      .handler = RenameCommand,
      .summary = "Rename a key",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}, {"newkey", "key", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "renamenx",
      .arity = 3,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = 2,
      .step = 1,
      .handler = RenameNxCommand,
      .summary = "Rename a key, only if the new key does not exist",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}, {"newkey", "key", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "expire",
      .arity = -3,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = ExpireCommand,
      .summary = "Set a key's time to live in seconds",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg, {"seconds", "integer", "", false, false}, kConditionArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "pexpire",
      .arity = -3,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = PExpireCommand,
      .summary = "Set a key's time to live in milliseconds",
      .since = "2.6.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg, {"milliseconds", "integer", "", false, false}, kConditionArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "expireat",
      .arity = -3,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = ExpireAtCommand,
      .summary = "Set the expiration for a key as a UNIX timestamp",
      .since = "1.2.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg, {"unix-time-seconds", "unix-time", "", false, false}, kConditionArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "pexpireat",
      .arity = -3,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = PExpireAtCommand,
      .summary = "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
      .since = "2.6.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg, {"unix-time-milliseconds", "unix-time", "", false, false}, kConditionArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "ttl",
      .arity = 2,
      .flags = kR | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = TtlCommand,
      .summary = "Get the time to live for a key",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg},
      .acl_categories = {"keyspace"},
      .tips = {"nondeterministic_output"},
  });
  table.Add(CommandSpec{
      .name = "pttl",
      .arity = 2,
      .flags = kR | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = PTtlCommand,
      .summary = "Get the time to live for a key in milliseconds",
      .since = "2.6.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg},
      .acl_categories = {"keyspace"},
      .tips = {"nondeterministic_output"},
  });
  table.Add(CommandSpec{
      .name = "expiretime",
      .arity = 2,
      .flags = kR | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = ExpireTimeCommand,
      .summary = "Get the expiration Unix timestamp for a key",
      .since = "7.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "pexpiretime",
      .arity = 2,
      .flags = kR | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = PExpireTimeCommand,
      .summary = "Get the expiration Unix timestamp for a key in milliseconds",
      .since = "7.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "persist",
      .arity = 2,
      .flags = kW | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = PersistCommand,
      .summary = "Remove the expiration from a key",
      .since = "2.2.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {kKeyArg},
      .acl_categories = {"keyspace"},
  });
  table.Add(CommandSpec{
      .name = "scan",
      .arity = -2,
      .flags = kR,
      .handler = ScanCommand,
      .summary = "Incrementally iterate the keys space",
      .since = "2.8.0",
      .group = "generic",
      .complexity =
          "O(1) for every call. O(N) for a complete iteration, including enough command "
          "calls for the cursor to return back to 0. N is the number of elements inside the "
          "collection.",
      .args = {{"cursor", "integer", "", false, false},
               {"pattern", "pattern", "MATCH", true, false},
               {"count", "integer", "COUNT", true, false},
               {"type", "string", "TYPE", true, false}},
      .acl_categories = {"keyspace"},
      .tips = {"nondeterministic_output", "request_policy:special"},
  });
  CommandSpec keys = CommandSpec{
      .name = "keys",
      .arity = 2,
      .flags = kR,
      .handler = KeysCommand,
      .summary = "Find all keys matching the given pattern",
      .since = "1.0.0",
      .group = "generic",
      .complexity =
          "O(N) with N being the number of keys in the database, under the assumption "
          "that the key names in the database and the given pattern have limited length.",
      .args = {{"pattern", "pattern", "", false, false}},
      .acl_categories = {"keyspace", "read", "slow", "dangerous"},
      .tips = {"request_policy:all_shards", "nondeterministic_output_order"},
  };
  table.Add(std::move(keys));
  table.Add(CommandSpec{
      .name = "randomkey",
      .arity = 1,
      .flags = kR,
      .handler = RandomKeyCommand,
      .summary = "Return a random key from the keyspace",
      .since = "1.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .acl_categories = {"keyspace"},
      .tips = {"request_policy:all_shards", "nondeterministic_output"},
  });
  CommandSpec dbsize = CommandSpec{
      .name = "dbsize",
      .arity = 1,
      .flags = kR | kFast,
      .handler = DbSizeCommand,
      .summary = "Return the number of keys in the selected database",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"keyspace", "read", "fast"},
      .tips = {"request_policy:all_shards", "response_policy:agg_sum"},
  };
  table.Add(std::move(dbsize));
  CommandSpec flushdb = CommandSpec{
      .name = "flushdb",
      .arity = -1,
      .flags = kW | kLockAll,
      .handler = FlushDbCommand,
      .summary = "Remove all keys from the current database",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(N) where N is the number of keys in the selected database",
      .args = {kFlushArg},
      .acl_categories = {"keyspace", "write", "slow", "dangerous"},
      .tips = {"request_policy:all_shards", "response_policy:all_succeeded"},
  };
  table.Add(std::move(flushdb));
  CommandSpec flushall = CommandSpec{
      .name = "flushall",
      .arity = -1,
      .flags = kW | kLockAll,
      .handler = FlushAllCommand,
      .summary = "Remove all keys from all databases",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(N) where N is the total number of keys in all databases",
      .args = {kFlushArg},
      .acl_categories = {"keyspace", "write", "slow", "dangerous"},
      .tips = {"request_policy:all_shards", "response_policy:all_succeeded"},
  };
  table.Add(std::move(flushall));
  RegisterMemoryCommands(table);
  RegisterObjectCommands(table);
  RegisterCopyCommands(table);
}

}  // namespace cuckood::server

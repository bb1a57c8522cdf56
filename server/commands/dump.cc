// DUMP, RESTORE and RESTORE-ASKING: keys moved between servers as Redis DUMP payloads
// (core/rdb.h), checked in Redis 7.0's order with its reply texts: options, then BUSYKEY, then
// the TTL, then the payload's version and checksum, then its contents.
#include <limits>

#include "core/rdb.h"
#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/db.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kBusyKey = "BUSYKEY Target key name already exists.";
constexpr std::string_view kBadPayload = "ERR DUMP payload version or checksum are wrong";
constexpr std::string_view kBadTtl = "ERR Invalid TTL value, must be >= 0";
constexpr std::string_view kBadIdleTime = "ERR Invalid IDLETIME value, must be >= 0";
constexpr std::string_view kBadFreq = "ERR Invalid FREQ value, must be >= 0 and <= 255";

constexpr int64_t kMaxFreq = 255;

void Dump(CommandContext& ctx) {
  auto payload = ctx.server.db().Dump(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!payload.ok()) {
    ReplyStatusError(ctx.out, payload.status());
    return;
  }
  if (!payload->has_value()) {
    ctx.server.stats().keyspace_misses++;
    ctx.out.Null();
    return;
  }
  ctx.server.stats().keyspace_hits++;
  ctx.out.Bulk(**payload);
}

struct RestoreOptions {
  bool replace = false;
  bool absttl = false;
  // IDLETIME and FREQ are checked as Redis checks them; cuckood keeps no LRU/LFU data.
  int64_t idle_time = -1;
  int64_t freq = -1;
};

// Parses argv[4...]; false after writing the error reply.
bool ParseRestoreOptions(CommandContext& ctx, RestoreOptions* o) {
  const Argv& argv = ctx.argv;
  for (size_t j = 4; j < argv.size(); ++j) {
    const bool has_value = j + 1 < argv.size();
    if (EqualsIgnoreCase(argv[j], "replace")) {
      o->replace = true;
    } else if (EqualsIgnoreCase(argv[j], "absttl")) {
      o->absttl = true;
    } else if (EqualsIgnoreCase(argv[j], "idletime") && has_value && o->freq == -1) {
      auto v = ParseInt64(argv[++j]);
      if (!v) {
        ctx.out.Error(kNotIntegerError);
        return false;
      }
      if (*v < 0) {
        ctx.out.Error(kBadIdleTime);
        return false;
      }
      o->idle_time = *v;
    } else if (EqualsIgnoreCase(argv[j], "freq") && has_value && o->idle_time == -1) {
      auto v = ParseInt64(argv[++j]);
      if (!v) {
        ctx.out.Error(kNotIntegerError);
        return false;
      }
      if (*v < 0 || *v > kMaxFreq) {
        ctx.out.Error(kBadFreq);
        return false;
      }
      o->freq = *v;
    } else {
      ctx.out.Error(kSyntaxError);
      return false;
    }
  }
  return true;
}

void Restore(CommandContext& ctx) {
  ctx.NothingModified();
  RestoreOptions o;
  if (!ParseRestoreOptions(ctx, &o)) {
    return;
  }
  auto& db = ctx.server.db();
  const std::string_view key = ctx.argv[1];
  if (!o.replace) {
    auto exists = db.Exists(ctx.scope, ctx.ns, key);
    if (!exists.ok()) {
      ReplyStatusError(ctx.out, exists.status());
      return;
    }
    if (*exists) {
      ctx.out.Error(kBusyKey);
      return;
    }
  }
  auto ttl = ParseInt64(ctx.argv[2]);
  if (!ttl) {
    ctx.out.Error(kNotIntegerError);
    return;
  }
  if (*ttl < 0) {
    ctx.out.Error(kBadTtl);
    return;
  }
  core::rdb::Payload payload;
  core::Limits any_size;
  any_size.max_filter_bytes = std::numeric_limits<uint64_t>::max();  // storage applies its own
  switch (core::rdb::ParsePayload(ctx.argv[3], any_size, &payload)) {
    case core::rdb::ParseResult::kOk:
      break;
    case core::rdb::ParseResult::kVersionOrChecksum:
      ctx.out.Error(kBadPayload);
      return;
    case core::rdb::ParseResult::kBadFormat:
      ctx.out.Error(kBadDataFormatError);
      return;
  }
  uint64_t expire_ms = 0;
  if (*ttl > 0) {
    const uint64_t t = static_cast<uint64_t>(*ttl);
    const uint64_t now = storage::NowMs();
    expire_ms = o.absttl ? t : (t > std::numeric_limits<uint64_t>::max() - now ? t : t + now);
  }
  auto changed =
      db.Restore(ctx.ns, key, payload, expire_ms, ctx.server.live_config().cf_settings());
  if (!changed.ok()) {
    ReplyStatusError(ctx.out, changed.status());
    return;
  }
  if (*changed) {
    ctx.Modified(key);
  }
  ctx.out.SimpleString("OK");
}

std::vector<CommandArgDoc> RestoreArgs() {
  return {{"key", "key", "", false, false},
          {"ttl", "integer", "", false, false},
          {"serialized-value", "string", "", false, false},
          {"replace", "pure-token", "REPLACE", true, false},
          {"absttl", "pure-token", "ABSTTL", true, false},
          {"seconds", "integer", "IDLETIME", true, false},
          {"frequency", "integer", "FREQ", true, false}};
}

}  // namespace

void RegisterDumpCommands(CommandTable& table) {
  constexpr std::string_view kRestoreComplexity =
      "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, "
      "where N is the number of Redis objects composing the value and M their average size. For "
      "small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply "
      "O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting "
      "values into sorted sets is O(log(N)).";
  table.Add(CommandSpec{
      .name = "dump",
      .arity = 2,
      .flags = kReadOnly | kBackground,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = Dump,
      .summary = "Return a serialized version of the value stored at the specified key.",
      .since = "2.6.0",
      .group = "generic",
      .complexity =
          "O(1) to access the key and additional O(N*M) to serialize it, where N is the "
          "number of Redis objects composing the value and M their average size. For small string "
          "values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"keyspace"},
      .tips = {"nondeterministic_output"},
  });
  table.Add(CommandSpec{
      .name = "restore",
      .arity = -4,
      .flags = kWrite | kDenyOom | kBackground,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = Restore,
      .summary =
          "Create a key using the provided serialized value, previously obtained using DUMP.",
      .since = "2.6.0",
      .group = "generic",
      .complexity = std::string(kRestoreComplexity),
      .args = RestoreArgs(),
      .acl_categories = {"keyspace", "dangerous"},
  });
  CommandSpec asking = CommandSpec{
      .name = "restore-asking",
      .arity = -4,
      .flags = kWrite | kDenyOom | kAsking | kBackground,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = Restore,
      .summary = "An internal command for migrating keys in a cluster",
      .since = "3.0.0",
      .group = "server",
      .complexity = std::string(kRestoreComplexity),
      .args = RestoreArgs(),
      .acl_categories = {"keyspace", "dangerous"},
  };
  table.Add(std::move(asking));
  RegisterMigrateCommand(table);
}

}  // namespace cuckood::server

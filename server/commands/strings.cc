// SET / GET: plain string keys, so that clients and tests can hold other types next to filters
// (and see WRONGTYPE where Redis shows it).
#include "server/command.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/engine.h"

namespace cuckood::server {
namespace {

void Set(CommandContext& ctx) {
  const Argv& argv = ctx.argv;
  ctx.NothingModified();
  bool nx = false, xx = false, keep_ttl = false, get = false;
  uint64_t expire_ms = 0;
  bool has_expire = false;
  for (size_t i = 3; i < argv.size(); ++i) {
    auto opt = ToUpper(argv[i]);
    if (opt == "NX" && !xx) {
      nx = true;
    } else if (opt == "XX" && !nx) {
      xx = true;
    } else if (opt == "GET") {
      get = true;
    } else if (opt == "KEEPTTL" && !has_expire) {
      keep_ttl = true;
    } else if ((opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT") && !keep_ttl &&
               !has_expire && i + 1 < argv.size()) {
      auto v = ParseInt64(argv[++i]);
      if (!v) {
        ctx.out.Error(kNotIntegerError);
        return;
      }
      if (*v <= 0) {
        ctx.out.Error("ERR invalid expire time in 'set' command");
        return;
      }
      const uint64_t now = storage::NowMs();
      const uint64_t n = static_cast<uint64_t>(*v);
      if (opt == "EX") {
        expire_ms = now + n * 1000;
      } else if (opt == "PX") {
        expire_ms = now + n;
      } else if (opt == "EXAT") {
        expire_ms = n * 1000;
      } else {
        expire_ms = n;
      }
      has_expire = true;
    } else {
      ctx.out.Error(kSyntaxError);
      return;
    }
  }
  auto old = ctx.server.db().Get(ctx.scope, ctx.ns, argv[1]);
  if (!old.ok()) {
    ReplyStatusError(ctx.out, old.status());
    return;
  }
  if (get && old->has_value() && (*old)->type != storage::KeyType::kString) {
    ctx.out.Error(kWrongTypeError);
    return;
  }
  const bool exists = old->has_value();
  if ((nx && exists) || (xx && !exists)) {
    if (get && exists) {
      ctx.out.Bulk((*old)->value);
    } else {
      ctx.out.Null();
    }
    return;
  }
  auto s = ctx.server.db().SetString(ctx.ns, argv[1], argv[2], expire_ms, keep_ttl);
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.Modified(argv[1]);
  if (get) {
    if (exists) {
      ctx.out.Bulk((*old)->value);
    } else {
      ctx.out.Null();
    }
    return;
  }
  ctx.out.SimpleString("OK");
}

void Get(CommandContext& ctx) {
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  if (!m->has_value()) {
    ctx.server.stats().keyspace_misses++;
    ctx.out.Null();
    return;
  }
  if ((*m)->type != storage::KeyType::kString) {
    ctx.out.Error(kWrongTypeError);
    return;
  }
  ctx.server.stats().keyspace_hits++;
  ctx.out.Bulk((*m)->value);
}

void StrLen(CommandContext& ctx) {
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[1]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  if (!m->has_value()) {
    ctx.out.Integer(0);
    return;
  }
  if ((*m)->type != storage::KeyType::kString) {
    ctx.out.Error(kWrongTypeError);
    return;
  }
  ctx.out.Integer(static_cast<int64_t>((*m)->value.size()));
}

}  // namespace

void RegisterStringCommands(CommandTable& table) {
  table.Add(CommandSpec{
      .name = "set",
      .arity = -3,
      .flags = kWrite | kDenyOom,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = Set,
      .summary = "Sets the string value of a key, ignoring its type. The key is created if it "
                 "doesn't exist.",
      .group = "string",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false},
               {"value", "string", "", false, false},
               {"condition", "oneof", "", true, false},
               {"get", "pure-token", "GET", true, false},
               {"expiration", "oneof", "", true, false}},
      .acl_categories = {"write", "string", "slow"},
  });

  table.Add(CommandSpec{
      .name = "get",
      .arity = 2,
      .flags = kReadOnly | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = Get,
      .summary = "Returns the string value of a key.",
      .group = "string",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"read", "string", "fast"},
  });

  table.Add(CommandSpec{
      .name = "strlen",
      .arity = 2,
      .flags = kReadOnly | kFast,
      .first_key = 1,
      .last_key = 1,
      .step = 1,
      .handler = StrLen,
      .summary = "Returns the length of a string value.",
      .since = "2.2.0",
      .group = "string",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"read", "string", "fast"},
  });
}

}  // namespace cuckood::server

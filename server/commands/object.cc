// OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT | HELP and TOUCH, registered by
// RegisterKeyspaceCommands.
//
// Replies follow Redis 7.0 with the default maxmemory-policy (noeviction, so access frequency is
// not tracked). cuckood keeps no per-key access clock: IDLETIME answers 0 for a live key. Strings
// report the encoding Redis would choose for a value written by SET (int, embstr up to 44 bytes,
// raw); filters are module values, which Redis reports as "raw".
#include <cstdint>
#include <string>
#include <string_view>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/db.h"

namespace cuckood::server {

namespace {

constexpr std::string_view kFreqNotTracked =
    "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that "
    "when switching between policies at runtime LRU and LFU data will take some time to adjust.";
// Redis's refcount of a shared object (small integers are shared when no LRU/LFU policy is set).
constexpr int64_t kSharedRefcount = 2147483647;
constexpr int64_t kSharedIntegers = 10000;
constexpr size_t kEmbstrMaxLen = 44;

// The integer a string holds when Redis would store it as one (canonical decimal, fits int64).
std::optional<int64_t> CanonicalInteger(std::string_view v) {
  if (v.empty() || v.size() > 20) {
    return std::nullopt;
  }
  auto n = ParseInt64(v);
  if (!n || std::to_string(*n) != v) {
    return std::nullopt;
  }
  return n;
}

// Looks the key up; replies nil and returns nullopt when absent (or the error on failure).
std::optional<storage::Metadata> LookupOrNil(CommandContext& ctx) {
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[2]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return std::nullopt;
  }
  if (!m->has_value()) {
    ctx.out.Null();
    return std::nullopt;
  }
  return std::move(**m);
}

}  // namespace

std::string_view ObjectEncoding(const storage::Metadata& meta) {
  if (meta.type != storage::KeyType::kString) {
    return "raw";
  }
  if (CanonicalInteger(meta.value)) {
    return "int";
  }
  return meta.value.size() <= kEmbstrMaxLen ? "embstr" : "raw";
}

int64_t ObjectRefcount(const storage::Metadata& meta) {
  if (meta.type == storage::KeyType::kString) {
    auto n = CanonicalInteger(meta.value);
    if (n && *n >= 0 && *n < kSharedIntegers) {
      return kSharedRefcount;
    }
  }
  return 1;
}

namespace {

void ObjectEncodingCommand(CommandContext& ctx) {
  if (auto m = LookupOrNil(ctx)) {
    ctx.out.Bulk(ObjectEncoding(*m));
  }
}

void ObjectFreqCommand(CommandContext& ctx) {
  if (auto m = LookupOrNil(ctx)) {
    ctx.out.Error(kFreqNotTracked);
  }
}

void ObjectIdleTimeCommand(CommandContext& ctx) {
  if (auto m = LookupOrNil(ctx)) {
    ctx.out.Integer(0);
  }
}

void ObjectRefcountCommand(CommandContext& ctx) {
  if (auto m = LookupOrNil(ctx)) {
    ctx.out.Integer(ObjectRefcount(*m));
  }
}

void ObjectHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "OBJECT",
            {"ENCODING <key>",
             "    Return the kind of internal representation used in order to store the value",
             "    associated with a <key>.", "FREQ <key>",
             "    Return the access frequency index of the <key>. The returned integer is",
             "    proportional to the logarithm of the recent access frequency of the key.",
             "IDLETIME <key>",
             "    Return the idle time of the <key>, that is the approximated number of",
             "    seconds elapsed since the last access to the key.", "REFCOUNT <key>",
             "    Return the number of references of the value associated with the specified",
             "    <key>."});
}

// TOUCH counts the keys that exist; a key named twice counts twice, as in Redis.
void TouchCommand(CommandContext& ctx) {
  int64_t found = 0;
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    auto r = ctx.server.db().Exists(ctx.scope, ctx.ns, ctx.argv[i]);
    if (!r.ok()) {
      ReplyStatusError(ctx.out, r.status());
      return;
    }
    found += *r ? 1 : 0;
  }
  ctx.out.Integer(found);
}

}  // namespace

void RegisterObjectCommands(CommandTable& table) {
  CommandSpec object = CommandSpec{
      .name = "object",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for object introspection commands",
      .since = "2.2.3",
      .group = "generic",
      .complexity = "Depends on subcommand.",
  };
  object.subcommands.push_back(CommandSpec{
      .name = "object|encoding",
      .arity = 3,
      .flags = kReadOnly,
      .first_key = 2,
      .last_key = 2,
      .step = 1,
      .handler = ObjectEncodingCommand,
      .summary = "Inspect the internal encoding of a Redis object",
      .since = "2.2.3",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  object.subcommands.push_back(CommandSpec{
      .name = "object|freq",
      .arity = 3,
      .flags = kReadOnly,
      .first_key = 2,
      .last_key = 2,
      .step = 1,
      .handler = ObjectFreqCommand,
      .summary = "Get the logarithmic access frequency counter of a Redis object",
      .since = "4.0.0",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  object.subcommands.push_back(CommandSpec{
      .name = "object|idletime",
      .arity = 3,
      .flags = kReadOnly,
      .first_key = 2,
      .last_key = 2,
      .step = 1,
      .handler = ObjectIdleTimeCommand,
      .summary = "Get the time since a Redis object was last accessed",
      .since = "2.2.3",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  object.subcommands.push_back(CommandSpec{
      .name = "object|refcount",
      .arity = 3,
      .flags = kReadOnly,
      .first_key = 2,
      .last_key = 2,
      .step = 1,
      .handler = ObjectRefcountCommand,
      .summary = "Get the number of references to the value of the key",
      .since = "2.2.3",
      .group = "generic",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"keyspace"},
  });
  object.subcommands.push_back(CommandSpec{
      .name = "object|help",
      .arity = 2,
      .flags = kReadOnly | kLoading | kStale,
      .handler = ObjectHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "6.2.0",
      .group = "generic",
      .complexity = "O(1)",
      .acl_categories = {"keyspace"},
  });
  table.Add(std::move(object));

  CommandSpec touch = CommandSpec{
      .name = "touch",
      .arity = -2,
      .flags = kReadOnly | kFast,
      .first_key = 1,
      .last_key = -1,
      .step = 1,
      .handler = TouchCommand,
      .summary =
          "Alters the last access time of a key(s). Returns the number of existing keys specified.",
      .since = "3.2.1",
      .group = "generic",
      .complexity = "O(N) where N is the number of keys that will be touched.",
      .args = {{"key", "key", "", false, true}},
      .acl_categories = {"keyspace"},
  };
  table.Add(std::move(touch));
}

}  // namespace cuckood::server

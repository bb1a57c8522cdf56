// Connection commands: PING, ECHO, QUIT, RESET, HELLO, AUTH, SELECT and CLIENT.
//
// These handlers change the calling client's state (ctx.client). The only user is "default",
// whose password is `requirepass` (none = any password is accepted, as Redis's nopass user).
#include "server/connection.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/pubsub.h"
#include "server/replication.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kWrongPass =
    "WRONGPASS invalid username-password pair or user is disabled.";
constexpr std::string_view kNoPasswordSet =
    "ERR AUTH <password> called without any password configured for the default user. Are you "
    "sure your configuration is correct?";
constexpr std::string_view kHelloNoAuth =
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
    "AUTH <user> <pass> option can be used to authenticate the client and select the RESP "
    "protocol version at the same time";
constexpr std::string_view kSelectInClusterMode = "ERR SELECT is not allowed in cluster mode";
constexpr std::string_view kRedisVersion = "7.0.15";
// The module clients look for to find the cuckoo commands (RedisBloom 2.8.2).
constexpr int64_t kModuleVersion = 20820;

// Compares without an early exit, so the time taken does not tell how much of a guess matched.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const auto x = static_cast<unsigned char>(i < a.size() ? a[i] : 0);
    const auto y = static_cast<unsigned char>(i < b.size() ? b[i] : 0);
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

bool CheckPassword(CommandContext& ctx, std::string_view user, std::string_view pass) {
  if (user != "default") {
    return false;
  }
  const std::string required = ctx.server.live_config().Get().requirepass;
  return required.empty() || ConstantTimeEquals(pass, required);
}

// ---- PING / ECHO / QUIT / RESET -----------------------------------------------------------------

void PingCommand(CommandContext& ctx) {
  if (ctx.argv.size() > 2) {
    ctx.out.Error(ArityError("ping"));
    return;
  }
  if (InSubscribedMode(ctx.client)) {
    // A RESP2 subscriber gets PING's answer in the shape of a message: ["pong", argument].
    ctx.out.ArrayHeader(2);
    ctx.out.Bulk("pong");
    ctx.out.Bulk(ctx.argv.size() == 2 ? ctx.argv[1] : std::string_view());
    return;
  }
  if (ctx.argv.size() == 2) {
    ctx.out.Bulk(ctx.argv[1]);
  } else {
    ctx.out.SimpleString("PONG");
  }
}

void EchoCommand(CommandContext& ctx) {
  ctx.out.Bulk(ctx.argv[1]);
}

void QuitCommand(CommandContext& ctx) {
  ctx.out.SimpleString("OK");
  ctx.client.close_after_reply = true;
}

// Back to a fresh connection's state, except the library attributes (they still describe the
// client library behind the connection).
void ResetCommand(CommandContext& ctx) {
  Client& c = ctx.client;
  c.in_multi = false;
  c.multi_dirty = false;
  c.queued.clear();
  ctx.server.watches().UnwatchAll(c);
  ctx.server.pubsub().UnsubscribeAll(c);  // (no unsubscribe replies, as in Redis)
  c.db = 0;
  c.proto = 2;
  c.name.clear();
  c.no_evict = false;
  c.no_touch = false;
  c.cluster_readonly = false;  // as Redis: back to READWRITE
  c.cluster_asking = false;
  c.authenticated = ctx.server.live_config().Get().requirepass.empty();
  ctx.out.SimpleString("RESET");
}

// ---- HELLO / AUTH / SELECT ----------------------------------------------------------------------

void WriteHelloReply(CommandContext& ctx) {
  // The reply already speaks the protocol HELLO just chose.
  resp::Writer out(ctx.out.buffer(), ctx.client.proto);
  out.MapHeader(7);
  out.Bulk("server");
  out.Bulk("redis");
  out.Bulk("version");
  out.Bulk(kRedisVersion);
  out.Bulk("proto");
  out.Integer(ctx.client.proto);
  out.Bulk("id");
  out.Integer(static_cast<int64_t>(ctx.client.id));
  out.Bulk("mode");
  out.Bulk(ctx.server.cluster() != nullptr ? "cluster" : "standalone");
  out.Bulk("role");
  out.Bulk(ctx.server.replication().is_replica() ? "replica" : "master");
  out.Bulk("modules");
  out.ArrayHeader(1);
  out.MapHeader(4);
  out.Bulk("name");
  out.Bulk(kModuleName);
  out.Bulk("ver");
  out.Integer(kModuleVersion);
  out.Bulk("path");
  out.Bulk("");
  out.Bulk("args");
  out.ArrayHeader(0);
}

// HELLO [protover [AUTH user pass] [SETNAME name]]: options are all parsed before anything
// changes; then authentication, then the name, then the protocol.
void HelloCommand(CommandContext& ctx) {
  int64_t proto = 0;
  size_t next = 1;
  if (ctx.argv.size() >= 2) {
    auto v = ParseInt64(ctx.argv[next++]);
    if (!v) {
      ctx.out.Error("ERR Protocol version is not an integer or out of range");
      return;
    }
    if (*v < 2 || *v > 3) {
      ctx.out.Error("NOPROTO unsupported protocol version");
      return;
    }
    proto = *v;
  }
  std::optional<std::string_view> user, pass, name;
  for (size_t j = next; j < ctx.argv.size(); ++j) {
    const size_t more = ctx.argv.size() - 1 - j;
    if (EqualsIgnoreCase(ctx.argv[j], "auth") && more >= 2) {
      user = ctx.argv[j + 1];
      pass = ctx.argv[j + 2];
      j += 2;
    } else if (EqualsIgnoreCase(ctx.argv[j], "setname") && more >= 1) {
      name = ctx.argv[j + 1];
      ++j;
    } else {
      ctx.out.Error("ERR Syntax error in HELLO option '" + std::string(ctx.argv[j]) + "'");
      return;
    }
  }
  if (user) {
    if (!CheckPassword(ctx, *user, *pass)) {
      ctx.out.Error(kWrongPass);
      return;
    }
    ctx.client.authenticated = true;
  }
  if (!ctx.client.authenticated) {
    ctx.out.Error(kHelloNoAuth);
    return;
  }
  if (name) {
    if (!ValidClientAttr(*name)) {
      ctx.out.Error(kBadClientName);
      return;
    }
    ctx.client.name = std::string(*name);
  }
  if (proto != 0) {
    ctx.client.proto = static_cast<int>(proto);
  }
  WriteHelloReply(ctx);
}

// AUTH [user] password
void AuthCommand(CommandContext& ctx) {
  if (ctx.argv.size() > 3) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  std::string_view user = "default";
  std::string_view pass = ctx.argv[1];
  if (ctx.argv.size() == 3) {
    user = ctx.argv[1];
    pass = ctx.argv[2];
  } else if (ctx.server.live_config().Get().requirepass.empty()) {
    ctx.out.Error(kNoPasswordSet);
    return;
  }
  if (!CheckPassword(ctx, user, pass)) {
    ctx.out.Error(kWrongPass);
    return;
  }
  ctx.client.authenticated = true;
  ctx.out.SimpleString("OK");
}

void SelectCommand(CommandContext& ctx) {
  auto id = ParseInt64(ctx.argv[1]);
  if (!id) {
    ctx.out.Error(kNotIntegerError);
    return;
  }
  if (*id < INT32_MIN || *id > INT32_MAX) {
    ctx.out.Error("ERR value is out of range, value must between -2147483648 and 2147483647");
    return;
  }
  if (ctx.server.cluster() != nullptr && *id != 0) {
    ctx.out.Error(kSelectInClusterMode);
    return;
  }
  const int databases = ctx.server.live_config().Get().databases;
  if (*id < 0 || *id >= databases || *id > UINT16_MAX) {
    ctx.out.Error(kDbOutOfRange);
    return;
  }
  ctx.client.db = static_cast<uint16_t>(*id);
  ctx.out.SimpleString("OK");
}

// ---- registration -------------------------------------------------------------------------------

}  // namespace

void RegisterConnectionCommands(CommandTable& table) {
  const uint32_t kConn = kLoading | kStale | kFast;
  table.Add(CommandSpec{
      .name = "ping",
      .arity = -1,
      .flags = kFast,
      .handler = PingCommand,
      .summary = "Ping the server",
      .since = "1.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"message", "string", "", true, false}},
      .acl_categories = {"connection"},
      .tips = {"request_policy:all_shards", "response_policy:all_succeeded"},
  });
  table.Add(CommandSpec{
      .name = "echo",
      .arity = 2,
      .flags = kFast,
      .handler = EchoCommand,
      .summary = "Echo the given string",
      .since = "1.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"message", "string", "", false, false}},
      .acl_categories = {"connection"},
  });
  table.Add(CommandSpec{
      .name = "quit",
      .arity = -1,
      .flags = kConn | kNoAuth | kNoMulti | kNoScript,
      .handler = QuitCommand,
      .summary = "Close the connection",
      .since = "1.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .acl_categories = {"connection"},
  });
  table.Add(CommandSpec{
      .name = "reset",
      .arity = 1,
      .flags = kConn | kNoAuth | kNoMulti | kNoScript,
      .handler = ResetCommand,
      .summary = "Reset the connection",
      .since = "6.2.0",
      .group = "connection",
      .complexity = "O(1)",
      .acl_categories = {"connection"},
  });
  table.Add(CommandSpec{
      .name = "hello",
      .arity = -1,
      .flags = kConn | kNoAuth | kNoScript,
      .handler = HelloCommand,
      .summary = "Handshake with Redis",
      .since = "6.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"protover", "integer", "", true, false},
               {"username_password", "block", "AUTH", true, false},
               {"clientname", "string", "SETNAME", true, false}},
      .acl_categories = {"connection"},
  });
  table.Add(CommandSpec{
      .name = "auth",
      .arity = -2,
      .flags = kConn | kNoAuth | kNoScript,
      .handler = AuthCommand,
      .summary = "Authenticate to the server",
      .since = "1.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"username", "string", "", true, false}, {"password", "string", "", false, false}},
      .acl_categories = {"connection"},
  });
  table.Add(CommandSpec{
      .name = "select",
      .arity = 2,
      .flags = kConn,
      .handler = SelectCommand,
      .summary = "Change the selected database for the current "
                 "connection",
      .since = "1.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"index", "integer", "", false, false}},
      .acl_categories = {"connection"},
  });
  table.Add(ClientCommandSpec());
}

}  // namespace cuckood::server

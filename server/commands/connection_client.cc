// CLIENT and its subcommands: ID, SETNAME, GETNAME, LIST, INFO, KILL, SETINFO, NO-EVICT,
// NO-TOUCH, HELP. Other connections are reached through Server::Connections(); their lines come
// from Connection::Describe().
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/connection.h"
#include "server/pubsub.h"
#include "server/replication.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kPauseTimeoutNotInteger =
    "ERR timeout is not an integer or out of range";
constexpr std::string_view kPauseTimeoutNegative = "ERR timeout is negative";
constexpr std::string_view kPauseMode = "ERR CLIENT PAUSE mode must be WRITE or ALL";

// Redis's client types (CLIENT LIST TYPE, CLIENT KILL TYPE); "slave" is "replica".
std::optional<ClientKind> ParseClientType(std::string_view t) {
  if (EqualsIgnoreCase(t, "normal")) {
    return ClientKind::kNormal;
  }
  if (EqualsIgnoreCase(t, "pubsub")) {
    return ClientKind::kPubSub;
  }
  if (EqualsIgnoreCase(t, "replica") || EqualsIgnoreCase(t, "slave")) {
    return ClientKind::kReplica;
  }
  if (EqualsIgnoreCase(t, "master")) {
    return ClientKind::kMaster;
  }
  return std::nullopt;
}

// The kind of a connection; the caller's own is read from ctx.client (its snapshot may be older
// than the commands of this batch).
ClientKind KindOf(CommandContext& ctx, const std::shared_ptr<Connection>& conn) {
  return conn->id() == ctx.client.id ? ctx.client.kind : conn->kind();
}

std::string ConnectionLine(std::string line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
    line.pop_back();
  }
  line += '\n';
  return line;
}

// The calling client's line. A connection's snapshot is refreshed after each batch of commands,
// so the fields this batch may have changed are taken from ctx.client itself.
std::string OwnLine(CommandContext& ctx, std::string_view cmd) {
  const Client& c = ctx.client;
  std::string base;
  for (const auto& conn : ctx.server.clients().All()) {
    if (conn->id() == c.id) {
      base = conn->Describe();
      break;
    }
  }
  if (base.empty()) {
    base = "id=" + std::to_string(c.id) + " addr=" + c.addr + " laddr=" + c.laddr +
           " fd=-1 name= age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 "
           "qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 "
           "events=r cmd=NULL user=default redir=-1 resp=2 lib-name= lib-ver= io-thread=0";
  }
  std::string out;
  size_t pos = 0;
  while (pos < base.size()) {
    size_t end = base.find(' ', pos);
    if (end == std::string::npos) {
      end = base.size();
    }
    std::string_view token(base.data() + pos, end - pos);
    const auto eq = token.find('=');
    const std::string_view field = token.substr(0, eq == std::string_view::npos ? 0 : eq);
    std::string value;
    bool replace = true;
    if (field == "name") {
      value = c.name;
    } else if (field == "db") {
      value = std::to_string(c.db);
    } else if (field == "resp") {
      value = std::to_string(c.proto);
    } else if (field == "cmd") {
      value = std::string(cmd);
    } else if (field == "flags") {
      value = ClientFlagsText(c.kind, c.in_multi);
    } else if (field == "sub") {
      value = std::to_string(c.channels.size());
    } else if (field == "psub") {
      value = std::to_string(c.patterns.size());
    } else if (field == "idle") {
      value = "0";
    } else if (field == "lib-name") {
      value = c.lib_name;
    } else if (field == "lib-ver") {
      value = c.lib_ver;
    } else {
      replace = false;
    }
    if (!out.empty()) {
      out += ' ';
    }
    if (replace) {
      out += std::string(field) + "=" + value;
    } else {
      out += token;
    }
    pos = end + 1;
  }
  return ConnectionLine(std::move(out));
}

std::string LineFor(CommandContext& ctx, const std::shared_ptr<Connection>& conn,
                    std::string_view cmd) {
  return conn->id() == ctx.client.id ? OwnLine(ctx, cmd) : ConnectionLine(conn->Describe());
}

void ClientIdCommand(CommandContext& ctx) {
  ctx.out.Integer(static_cast<int64_t>(ctx.client.id));
}

void ClientSetNameCommand(CommandContext& ctx) {
  if (!ValidClientAttr(ctx.argv[2])) {
    ctx.out.Error(kBadClientName);
    return;
  }
  ctx.client.name = std::string(ctx.argv[2]);
  ctx.out.SimpleString("OK");
}

void ClientGetNameCommand(CommandContext& ctx) {
  if (ctx.client.name.empty()) {
    ctx.out.Null();
  } else {
    ctx.out.Bulk(ctx.client.name);
  }
}

// CLIENT LIST [TYPE type] | [ID id [id ...]]
void ClientListCommand(CommandContext& ctx) {
  std::string text;
  const size_t argc = ctx.argv.size();
  if (argc == 4 && EqualsIgnoreCase(ctx.argv[2], "type")) {
    const auto type = ParseClientType(ctx.argv[3]);
    if (!type) {
      ctx.out.Error("ERR Unknown client type '" + std::string(ctx.argv[3]) + "'");
      return;
    }
    for (const auto& conn : ctx.server.clients().All()) {
      if (KindOf(ctx, conn) == *type) {
        text += LineFor(ctx, conn, "client|list");
      }
    }
  } else if (argc > 3 && EqualsIgnoreCase(ctx.argv[2], "id")) {
    std::vector<int64_t> ids;
    for (size_t j = 3; j < argc; ++j) {
      auto id = ParseInt64(ctx.argv[j]);
      if (!id) {
        ctx.out.Error("ERR Invalid client ID");
        return;
      }
      ids.push_back(*id);
    }
    const auto conns = ctx.server.clients().All();
    for (int64_t id : ids) {
      for (const auto& conn : conns) {
        if (static_cast<int64_t>(conn->id()) == id) {
          text += LineFor(ctx, conn, "client|list");
        }
      }
    }
  } else if (argc != 2) {
    ctx.out.Error(kSyntaxError);
    return;
  } else {
    for (const auto& conn : ctx.server.clients().All()) {
      text += LineFor(ctx, conn, "client|list");
    }
  }
  ctx.out.Verbatim(text);
}

void ClientInfoCommand(CommandContext& ctx) {
  ctx.out.Verbatim(OwnLine(ctx, "client|info"));
}

struct KillFilter {
  bool old_form = false;
  uint64_t id = 0;  // 0 = any
  std::optional<std::string> addr, laddr;
  std::optional<ClientKind> type;
  bool skipme = true;
};

bool ParseKill(CommandContext& ctx, KillFilter* f) {
  const size_t argc = ctx.argv.size();
  if (argc == 3) {
    f->old_form = true;
    f->addr = std::string(ctx.argv[2]);
    f->skipme = false;  // the old form may kill the caller
    return true;
  }
  for (size_t i = 2; i < argc; i += 2) {
    const auto opt = ctx.argv[i];
    if (i + 1 >= argc) {
      ctx.out.Error(kSyntaxError);
      return false;
    }
    const auto val = ctx.argv[i + 1];
    if (EqualsIgnoreCase(opt, "id")) {
      auto id = ParseInt64(val);
      if (!id || *id < 1) {
        ctx.out.Error("ERR client-id should be greater than 0");
        return false;
      }
      f->id = static_cast<uint64_t>(*id);
    } else if (EqualsIgnoreCase(opt, "type")) {
      f->type = ParseClientType(val);
      if (!f->type) {
        ctx.out.Error("ERR Unknown client type '" + std::string(val) + "'");
        return false;
      }
    } else if (EqualsIgnoreCase(opt, "addr")) {
      f->addr = std::string(val);
    } else if (EqualsIgnoreCase(opt, "laddr")) {
      f->laddr = std::string(val);
    } else if (EqualsIgnoreCase(opt, "user")) {
      if (val != "default") {
        ctx.out.Error("ERR No such user '" + std::string(val) + "'");
        return false;
      }
    } else if (EqualsIgnoreCase(opt, "skipme")) {
      if (EqualsIgnoreCase(val, "yes")) {
        f->skipme = true;
      } else if (EqualsIgnoreCase(val, "no")) {
        f->skipme = false;
      } else {
        ctx.out.Error(kSyntaxError);
        return false;
      }
    } else {
      ctx.out.Error(kSyntaxError);
      return false;
    }
  }
  return true;
}

// CLIENT KILL ip:port (old form: +OK or "No such client") | CLIENT KILL <filter> <value> ...
// (new form: the number killed). The caller, when it matches, is closed after this reply.
void ClientKillCommand(CommandContext& ctx) {
  KillFilter f;
  if (!ParseKill(ctx, &f)) {
    return;
  }
  int64_t killed = 0;
  for (const auto& conn : ctx.server.clients().All()) {
    const bool self = conn->id() == ctx.client.id;
    if ((f.type && KindOf(ctx, conn) != *f.type) || (f.id != 0 && conn->id() != f.id) ||
        (f.addr && conn->addr() != *f.addr) || (f.laddr && conn->laddr() != *f.laddr) ||
        (self && f.skipme)) {
      continue;
    }
    if (self) {
      ctx.client.close_after_reply = true;
    } else {
      conn->Kill();
      // (as Redis frees the client at once: a PUBLISH right after the kill does not count it)
      ctx.server.pubsub().Detach(conn->id());
    }
    ++killed;
  }
  if (f.type == ClientKind::kReplica && f.id == 0 && !f.addr && !f.laddr) {
    // Replicas' links are not connections of the command path (replication/primary.h).
    killed += ctx.server.replication().KillReplicas();
  }
  if (!f.old_form) {
    ctx.out.Integer(killed);
  } else if (killed == 0) {
    ctx.out.Error("ERR No such client");
  } else {
    ctx.out.SimpleString("OK");
  }
}

// CLIENT SETINFO LIB-NAME|LIB-VER value (Redis 7.2).
void ClientSetInfoCommand(CommandContext& ctx) {
  const auto attr = ctx.argv[2];
  std::string* dest = nullptr;
  if (EqualsIgnoreCase(attr, "lib-name")) {
    dest = &ctx.client.lib_name;
  } else if (EqualsIgnoreCase(attr, "lib-ver")) {
    dest = &ctx.client.lib_ver;
  } else {
    ctx.out.Error("ERR Unrecognized option '" + std::string(attr) + "'");
    return;
  }
  if (!ValidClientAttr(ctx.argv[3])) {
    ctx.out.Error("ERR " + std::string(attr) +
                  " cannot contain spaces, newlines or special characters.");
    return;
  }
  *dest = std::string(ctx.argv[3]);
  ctx.out.SimpleString("OK");
}

// CLIENT NO-EVICT / NO-TOUCH on|off.
void SetOnOff(CommandContext& ctx, bool* field) {
  if (EqualsIgnoreCase(ctx.argv[2], "on")) {
    *field = true;
  } else if (EqualsIgnoreCase(ctx.argv[2], "off")) {
    *field = false;
  } else {
    ctx.out.Error(kSyntaxError);
    return;
  }
  ctx.out.SimpleString("OK");
}

void ClientNoEvictCommand(CommandContext& ctx) {
  SetOnOff(ctx, &ctx.client.no_evict);
}
void ClientNoTouchCommand(CommandContext& ctx) {
  SetOnOff(ctx, &ctx.client.no_touch);
}

// CLIENT PAUSE timeout [WRITE|ALL]: the connections hold the commands back (Server::Pause).
void ClientPauseCommand(CommandContext& ctx) {
  if (ctx.argv.size() > 4) {
    ReplySubcommandSyntaxError(ctx);
    return;
  }
  auto ms = ParseInt64(ctx.argv[2]);
  if (!ms) {
    ctx.out.Error(kPauseTimeoutNotInteger);
    return;
  }
  if (*ms < 0) {
    ctx.out.Error(kPauseTimeoutNegative);
    return;
  }
  bool all = true;
  if (ctx.argv.size() == 4) {
    if (EqualsIgnoreCase(ctx.argv[3], "write")) {
      all = false;
    } else if (!EqualsIgnoreCase(ctx.argv[3], "all")) {
      ctx.out.Error(kPauseMode);
      return;
    }
  }
  // (a pause of years is as good as forever; the clamp keeps the clock arithmetic in range)
  const int64_t capped = std::min<int64_t>(*ms, int64_t{1} << 40);
  ctx.server.dispatcher().Pause(
      std::chrono::steady_clock::now() + std::chrono::milliseconds(capped), all);
  ctx.out.SimpleString("OK");
}

void ClientUnpauseCommand(CommandContext& ctx) {
  ctx.server.dispatcher().Unpause();
  ctx.out.SimpleString("OK");
}

void ClientHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "CLIENT",
            {"GETNAME",
             "    Return the name of the current connection.",
             "ID",
             "    Return the ID of the current connection.",
             "INFO",
             "    Return information about the current client connection.",
             "KILL <ip:port>",
             "    Kill connection made from <ip:port>.",
             "KILL <option> <value> [<option> <value> [...]]",
             "    Kill connections. Options are:",
             "    * ADDR (<ip:port>|<unixsocket>:0)",
             "      Kill connections made from the specified address",
             "    * LADDR (<ip:port>|<unixsocket>:0)",
             "      Kill connections made to specified local address",
             "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
             "      Kill connections by type.",
             "    * USER <username>",
             "      Kill connections authenticated by <username>.",
             "    * SKIPME (YES|NO)",
             "      Skip killing current connection (default: yes).",
             "    * ID <client-id>",
             "      Kill connections by client id.",
             "LIST [options ...]",
             "    Return information about client connections. Options:",
             "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
             "      Return clients of specified type.",
             "    * ID <client-id> [<client-id> ...]",
             "      Return clients of specified IDs only.",
             "NO-EVICT (ON|OFF)",
             "    Protect current client connection from eviction.",
             "NO-TOUCH (ON|OFF)",
             "    Will not touch LRU/LFU stats when this mode is on.",
             "SETINFO <LIB-NAME|LIB-VER> <value>",
             "    Set client library name or version.",
             "SETNAME <name>",
             "    Assign the name <name> to the current connection."});
}

}  // namespace

CommandSpec ClientCommandSpec() {
  const uint32_t kCs = kNoScript | kLoading | kStale;
  CommandSpec client = CommandSpec{
      .name = "client",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for client connection commands",
      .since = "2.4.0",
      .group = "connection",
      .complexity = "Depends on subcommand.",
  };
  auto& subs = client.subcommands;
  subs.push_back(CommandSpec{
      .name = "client|id",
      .arity = 2,
      .flags = kCs,
      .handler = ClientIdCommand,
      .summary = "Returns the client ID for the current connection",
      .since = "5.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|setname",
      .arity = 3,
      .flags = kCs,
      .handler = ClientSetNameCommand,
      .summary = "Set the current connection name",
      .since = "2.6.9",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"connection-name", "string", "", false, false}},
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|getname",
      .arity = 2,
      .flags = kCs,
      .handler = ClientGetNameCommand,
      .summary = "Get the current connection name",
      .since = "2.6.9",
      .group = "connection",
      .complexity = "O(1)",
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|list",
      .arity = -2,
      .flags = kAdmin | kCs,
      .handler = ClientListCommand,
      .summary = "Get the list of client connections",
      .since = "2.4.0",
      .group = "connection",
      .complexity = "O(N) where N is the number of client connections",
      .args = {{"client-type", "oneof", "TYPE", true, false},
               {"client-id", "integer", "ID", true, true}},
      .acl_categories = {"connection"},
      .tips = {"nondeterministic_output"},
  });
  subs.push_back(CommandSpec{
      .name = "client|info",
      .arity = 2,
      .flags = kCs,
      .handler = ClientInfoCommand,
      .summary = "Returns information about the current client connection.",
      .since = "6.2.0",
      .group = "connection",
      .complexity = "O(1)",
      .acl_categories = {"connection"},
      .tips = {"nondeterministic_output"},
  });
  subs.push_back(CommandSpec{
      .name = "client|kill",
      .arity = -3,
      .flags = kAdmin | kCs,
      .handler = ClientKillCommand,
      .summary = "Kill the connection of a client",
      .since = "2.4.0",
      .group = "connection",
      .complexity = "O(N) where N is the number of client connections",
      .args = {{"ip:port", "string", "", true, false},
               {"client-id", "integer", "ID", true, false},
               {"ip:port", "string", "ADDR", true, false},
               {"ip:port", "string", "LADDR", true, false},
               {"yes/no", "string", "SKIPME", true, false}},
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|setinfo",
      .arity = 4,
      .flags = kCs,
      .handler = ClientSetInfoCommand,
      .summary = "Set client or connection specific info",
      .since = "7.2.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"attr", "oneof", "LIB-NAME|LIB-VER", false, false},
               {"value", "string", "", false, false}},
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|no-evict",
      .arity = 3,
      .flags = kAdmin | kCs,
      .handler = ClientNoEvictCommand,
      .summary = "Set client eviction mode for the current connection",
      .since = "7.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"enabled", "oneof", "ON|OFF", false, false}},
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|no-touch",
      .arity = 3,
      .flags = kCs,
      .handler = ClientNoTouchCommand,
      .summary = "Controls whether commands sent by the client will alter the LRU/LFU of the "
                 "keys they access.",
      .since = "7.2.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"enabled", "oneof", "ON|OFF", false, false}},
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|pause",
      .arity = -3,
      .flags = kAdmin | kNoScript | kLoading | kStale,
      .handler = ClientPauseCommand,
      .summary = "Suspend processing of clients' commands",
      .since = "3.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .args = {{"timeout", "integer", "", false, false},
               {"mode", "oneof", "WRITE|ALL", true, false}},
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|unpause",
      .arity = 2,
      .flags = kAdmin | kNoScript | kLoading | kStale,
      .handler = ClientUnpauseCommand,
      .summary = "Resume processing of clients that were paused",
      .since = "6.2.0",
      .group = "connection",
      .complexity = "O(N) Where N is the number of paused clients",
      .acl_categories = {"connection"},
  });
  subs.push_back(CommandSpec{
      .name = "client|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = ClientHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "5.0.0",
      .group = "connection",
      .complexity = "O(1)",
      .acl_categories = {"connection"},
  });
  return client;
}

}  // namespace cuckood::server

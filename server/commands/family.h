// Helpers shared by the generic command families (keyspace, connection, server, introspection):
// subcommand routing for container commands (CLIENT, CONFIG, MEMORY, ...), HELP replies, and
// the few functions one family file hands to another.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "server/command.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {

// Client names and library attributes: printable ASCII without spaces ('!' .. '~').
inline bool ValidClientAttr(std::string_view s) {
  for (char c : s) {
    if (c < '!' || c > '~') {
      return false;
    }
  }
  return true;
}
inline constexpr std::string_view kBadClientName =
    "ERR Client names cannot contain spaces, newlines or special characters.";
inline constexpr std::string_view kDbOutOfRange = "ERR DB index is out of range";
inline constexpr std::string_view kClusterDisabled =
    "ERR This instance has cluster support disabled";
// The name of the RedisBloom module, where replies list modules.
inline constexpr std::string_view kModuleName = "bf";

// The subcommand row of `parent` named by `sub` (case-insensitive), or nullptr.
inline const CommandSpec* FindSubcommand(const CommandSpec& parent, std::string_view sub) {
  const std::string wanted = parent.name + "|" + ToLower(sub);
  for (const auto& s : parent.subcommands) {
    if (s.name == wanted) {
      return &s;
    }
  }
  return nullptr;
}

// Handler of a container command: runs the subcommand row named by argv[1] after checking its
// arity. The dispatcher only knows the container row, so the subcommand errors are made here,
// worded as Redis 7 words them.
inline void RunSubcommand(CommandContext& ctx) {
  const CommandSpec* parent = ctx.server.commands().Find(ctx.argv[0]);
  if (parent == nullptr || ctx.argv.size() < 2) {
    ctx.out.Error(ArityError(ctx.argv[0]));
    return;
  }
  const CommandSpec* sub = FindSubcommand(*parent, ctx.argv[1]);
  if (sub == nullptr || sub->handler == nullptr) {
    ctx.out.Error("ERR unknown subcommand '" + std::string(ctx.argv[1].substr(0, 128)) + "'. Try " +
                  ToUpper(ctx.argv[0]) + " HELP.");
    return;
  }
  if (!ArityAccepts(*sub, ctx.argv.size())) {
    ctx.out.Error(ArityError(sub->name));
    return;
  }
  sub->handler(ctx);
}

// Redis's reply to a subcommand called with arguments it cannot take.
inline void ReplySubcommandSyntaxError(CommandContext& ctx) {
  ctx.out.Error("ERR unknown subcommand or wrong number of arguments for '" +
                std::string(ctx.argv[1].substr(0, 128)) + "'. Try " + ToUpper(ctx.argv[0]) +
                " HELP.");
}

// The HELP reply: a header line, the given lines, then the HELP entry, as status strings.
inline void ReplyHelp(resp::Writer& out, std::string_view command,
                      std::initializer_list<std::string_view> lines) {
  out.ArrayHeader(static_cast<int64_t>(lines.size() + 3));
  out.SimpleString(ToUpper(command) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (auto line : lines) {
    out.SimpleString(line);
  }
  out.SimpleString("HELP");
  out.SimpleString("    Prints this help.");
}

// MIGRATE (migrate.cc), registered by RegisterDumpCommands.
void RegisterMigrateCommand(CommandTable& table);

// MEMORY and DISK (memory.cc), registered by RegisterKeyspaceCommands.
void RegisterMemoryCommands(CommandTable& table);
// COPY, MOVE and SWAPDB (copy.cc), registered by RegisterKeyspaceCommands.
void RegisterCopyCommands(CommandTable& table);
// OBJECT and TOUCH (object.cc), registered by RegisterKeyspaceCommands.
void RegisterObjectCommands(CommandTable& table);
// What OBJECT ENCODING / REFCOUNT (and DEBUG OBJECT) report for a key.
std::string_view ObjectEncoding(const storage::Metadata& meta);
int64_t ObjectRefcount(const storage::Metadata& meta);
// The DEBUG row (debug.cc), registered by RegisterServerCommands.
CommandSpec DebugCommandSpec();

// The CLIENT container row (connection_client.cc), registered by RegisterConnectionCommands.
CommandSpec ClientCommandSpec();

// The CLUSTERX container row (clusterx.cc), registered by RegisterClusterCommands.
CommandSpec ClusterXCommandSpec();

// INFO (info.cc).
void InfoCommand(CommandContext& ctx);
// Bytes to Redis's human form: 1023B, 1.50K, 2.00M, ...
std::string BytesToHuman(uint64_t bytes);
// Process memory figures used by INFO memory and MEMORY STATS.
struct ProcessMemory {
  uint64_t used = 0;  // bytes handed out by malloc
  uint64_t rss = 0;   // resident set size
  uint64_t peak = 0;  // highest `used` seen
};
ProcessMemory ReadProcessMemory();

}  // namespace cuckood::server

// Server commands: CONFIG, TIME, LASTSAVE, SAVE, BGSAVE, BGREWRITEAOF, SHUTDOWN, SLOWLOG,
// LATENCY, LOLWUT, MONITOR, READONLY, READWRITE, and the INFO row (its handler is in
// info.cc). ROLE and WAIT are in replication.cc.
//
// Persistence commands map onto RocksDB: SAVE flushes the memtables (synchronously: a flush is
// bounded by the write buffer size), BGSAVE writes a checkpoint of the database to dir/backup,
// BGREWRITEAOF syncs the WAL.
#include <spdlog/spdlog.h>
#include <sys/time.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/command.h"
#include "server/commands/family.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/db.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kBackupDirName = "backup";
constexpr std::string_view kClusterDisabled = "ERR This instance has cluster support disabled";

// ---- CONFIG -------------------------------------------------------------------------------------

// Read-only answers for settings clients ask a Redis server about; a real option row of the same
// name wins.
std::vector<std::pair<std::string, std::string>> CompatConfig(const Config& c) {
  return {{"save", ""},
          {"appendonly", "yes"},
          {"maxmemory", "0"},
          {"maxmemory-policy", "noeviction"},
          {"cluster-enabled", "no"},
          {"notify-keyspace-events", ""},
          {"replica-read-only", "yes"},
          {"slave-read-only", "yes"},
          {"daemonize", "no"},
          {"hz", "10"},
          {"io-threads", "1"},
          {"databases", std::to_string(c.databases)},
          {"bind", c.bind},
          {"port", std::to_string(c.port)},
          {"dir", c.dir}};
}

bool IsCompatOnly(const std::string& name) {
  if (FindOption(name) != nullptr) {
    return false;
  }
  for (const auto& [n, v] : CompatConfig(Config())) {
    if (n == name) {
      return true;
    }
  }
  return false;
}

void ConfigGetCommand(CommandContext& ctx) {
  const Config cfg = ctx.server.config();
  std::vector<std::pair<std::string, std::string>> all;
  for (const auto& row : OptionTable()) {
    all.emplace_back(row.name, row.get(cfg));
  }
  for (auto& entry : CompatConfig(cfg)) {
    if (FindOption(entry.first) == nullptr) {
      all.push_back(std::move(entry));
    }
  }
  std::set<std::string> seen;
  std::vector<const std::pair<std::string, std::string>*> matched;
  for (size_t i = 2; i < ctx.argv.size(); ++i) {
    for (const auto& entry : all) {
      if (!seen.count(entry.first) && storage::GlobMatch(ctx.argv[i], entry.first, true)) {
        seen.insert(entry.first);
        matched.push_back(&entry);
      }
    }
  }
  ctx.out.MapHeader(static_cast<int64_t>(matched.size()));
  for (const auto* entry : matched) {
    ctx.out.Bulk(entry->first);
    ctx.out.Bulk(entry->second);
  }
}

std::string ConfigSetError(std::string_view name, std::string_view reason) {
  return "ERR CONFIG SET failed (possibly related to argument '" + std::string(name) + "') - " +
         std::string(reason);
}

// CONFIG SET name value [name value ...]: every name is checked before anything changes; a value
// that fails to apply rolls back the ones applied before it.
void ConfigSetCommand(CommandContext& ctx) {
  if (ctx.argv.size() % 2 != 0) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> names;
  for (size_t i = 2; i < ctx.argv.size(); i += 2) {
    const std::string name = ToLower(ctx.argv[i]);
    const OptionRow* row = FindOption(name);
    if (row == nullptr && !IsCompatOnly(name)) {
      ctx.out.Error("ERR Unknown option or number of arguments for CONFIG SET - '" +
                    std::string(ctx.argv[i]) + "'");
      return;
    }
    // `dir` is never changeable at run time (pointing it elsewhere is a classic attack path);
    // Redis 7 words this refusal as for its protected configs.
    if (name == "dir") {
      ctx.out.Error(ConfigSetError(ctx.argv[i], "can't set protected config"));
      return;
    }
    if (row == nullptr || !row->mutable_at_runtime) {
      ctx.out.Error(ConfigSetError(ctx.argv[i], "can't set immutable config"));
      return;
    }
    if (!names.insert(name).second) {
      ctx.out.Error(ConfigSetError(ctx.argv[i], "duplicate parameter"));
      return;
    }
    pairs.emplace_back(name, std::string(ctx.argv[i + 1]));
  }
  const Config before = ctx.server.config();
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (auto err = ctx.server.SetConfig(pairs[i].first, pairs[i].second)) {
      for (size_t j = 0; j < i; ++j) {
        (void)ctx.server.SetConfig(pairs[j].first, FindOption(pairs[j].first)->get(before));
      }
      ctx.out.Error(ConfigSetError(ctx.argv[2 + 2 * i], *err));
      return;
    }
  }
  ctx.out.SimpleString("OK");
}

void ConfigResetStatCommand(CommandContext& ctx) {
  ctx.server.stats().Reset();
  ctx.server.stats().ResetCommands();
  ctx.out.SimpleString("OK");
}

void ConfigRewriteCommand(CommandContext& ctx) {
  if (ctx.server.process().config_file.empty()) {
    ctx.out.Error("ERR The server is running without a config file");
    return;
  }
  if (auto err = RewriteConfigFile(ctx.server.process().config_file, ctx.server.config())) {
    spdlog::warn("CONFIG REWRITE of {} failed: {}", ctx.server.process().config_file, *err);
    ctx.out.Error("ERR Rewriting config file: " + *err);
    return;
  }
  spdlog::info("CONFIG REWRITE executed with success.");
  ctx.out.SimpleString("OK");
}

void ConfigHelpCommand(CommandContext& ctx) {
  ReplyHelp(
      ctx.out, "CONFIG",
      {"GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
       "SET <directive> <value>", "    Set the configuration <directive> to <value>.", "RESETSTAT",
       "    Reset statistics reported by the INFO command.", "REWRITE",
       "    Rewrite the configuration file (not supported)."});
}

// ---- TIME / LASTSAVE / SAVE / BGSAVE / BGREWRITEAOF / SHUTDOWN ----------------------------------

void TimeCommand(CommandContext& ctx) {
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  ctx.out.ArrayHeader(2);
  ctx.out.Bulk(std::to_string(tv.tv_sec));
  ctx.out.Bulk(std::to_string(tv.tv_usec));
}

void LastSaveCommand(CommandContext& ctx) {
  const uint64_t last = ctx.server.engine().last_save_unix();
  ctx.out.Integer(last != 0 ? static_cast<int64_t>(last) : ctx.server.process().start_unix);
}

void SaveCommand(CommandContext& ctx) {
  auto s = ctx.server.engine().Flush();
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("OK");
}

// BGSAVE: a consistent copy of the database in dir/backup (a RocksDB checkpoint: hard links to
// the SST files after a flush, so it takes moments and little space). It replaces the previous
// backup only once complete. A server started with --dir on a copy of it serves the same data.
void BgSaveCommand(CommandContext& ctx) {
  if (ctx.argv.size() > 2 || (ctx.argv.size() == 2 && !EqualsIgnoreCase(ctx.argv[1], "schedule"))) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  namespace fs = std::filesystem;
  const fs::path dir = ctx.server.config().dir;
  const fs::path tmp = dir / (std::string(kBackupDirName) + ".tmp");
  const fs::path old = dir / (std::string(kBackupDirName) + ".old");
  const fs::path backup = dir / std::string(kBackupDirName);
  std::error_code ec;
  fs::remove_all(tmp, ec);
  uint64_t seq = 0;
  auto s = ctx.server.engine().CreateCheckpoint(tmp.string(), &seq);
  if (!s.ok()) {
    fs::remove_all(tmp, ec);
    ReplyStatusError(ctx.out, s);
    return;
  }
  fs::remove_all(old, ec);
  if (fs::exists(backup)) {
    fs::rename(backup, old, ec);
  }
  fs::rename(tmp, backup, ec);
  if (ec) {
    ctx.out.Error("ERR cannot move the backup into place: " + ec.message());
    return;
  }
  fs::remove_all(old, ec);
  spdlog::info("backup of sequence {} written to {}", seq, backup.string());
  ctx.out.SimpleString("Background saving started");
}

void BgRewriteAofCommand(CommandContext& ctx) {
  auto s = ctx.server.engine().SyncWal();
  if (!s.ok()) {
    ReplyStatusError(ctx.out, s);
    return;
  }
  ctx.out.SimpleString("Background append only file rewriting started");
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: a clean stop always flushes RocksDB, so the
// options are only validated. On success there is no reply: the connection just closes.
void ShutdownCommand(CommandContext& ctx) {
  bool save = false, nosave = false, abort = false, other = false;
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    const auto opt = ctx.argv[i];
    if (EqualsIgnoreCase(opt, "nosave")) {
      nosave = true;
    } else if (EqualsIgnoreCase(opt, "save")) {
      save = true;
    } else if (EqualsIgnoreCase(opt, "now") || EqualsIgnoreCase(opt, "force")) {
      other = true;
    } else if (EqualsIgnoreCase(opt, "abort")) {
      abort = true;
    } else {
      ctx.out.Error(kSyntaxError);
      return;
    }
  }
  if ((save && nosave) || (abort && (save || nosave || other))) {
    ctx.out.Error(kSyntaxError);
    return;
  }
  if (abort) {
    ctx.out.Error("ERR No shutdown in progress.");
    return;
  }
  ctx.server.RequestShutdown();
  ctx.client.close_after_reply = true;
}

// ---- SLOWLOG ------------------------------------------------------------------------------------

void SlowlogGetCommand(CommandContext& ctx) {
  if (ctx.argv.size() > 3) {
    ReplySubcommandSyntaxError(ctx);
    return;
  }
  int64_t count = 10;
  if (ctx.argv.size() == 3) {
    auto n = ParseInt64(ctx.argv[2]);
    if (!n || *n < -1) {
      ctx.out.Error("ERR count should be greater than or equal to -1");
      return;
    }
    count = *n;
  }
  const auto entries = ctx.server.slowlog().Get(count);
  ctx.out.ArrayHeader(static_cast<int64_t>(entries.size()));
  for (const auto& e : entries) {
    ctx.out.ArrayHeader(6);
    ctx.out.Integer(static_cast<int64_t>(e.id));
    ctx.out.Integer(e.unix_time);
    ctx.out.Integer(e.micros);
    ctx.out.ArrayHeader(static_cast<int64_t>(e.argv.size()));
    for (const auto& a : e.argv) {
      ctx.out.Bulk(a);
    }
    ctx.out.Bulk(e.addr);
    ctx.out.Bulk(e.name);
  }
}

void SlowlogLenCommand(CommandContext& ctx) {
  ctx.out.Integer(static_cast<int64_t>(ctx.server.slowlog().Len()));
}

void SlowlogResetCommand(CommandContext& ctx) {
  ctx.server.slowlog().Reset();
  ctx.out.SimpleString("OK");
}

void SlowlogHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "SLOWLOG",
            {"GET [<count>]",
             "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
             "    Entries are made of:",
             "    id, timestamp, time in microseconds, arguments array, client IP and port,",
             "    client name", "LEN", "    Return the length of the slowlog.", "RESET",
             "    Reset the slowlog."});
}

// ---- LATENCY: no latency events are sampled, so every report is empty ---------------------------

void EmptyArrayCommand(CommandContext& ctx) {
  ctx.out.ArrayHeader(0);
}
void LatencyResetCommand(CommandContext& ctx) {
  ctx.out.Integer(0);
}

void LatencyGraphCommand(CommandContext& ctx) {
  ctx.out.Error("ERR No samples available for event '" + std::string(ctx.argv[2]) + "'");
}

void LatencyDoctorCommand(CommandContext& ctx) {
  ctx.out.Verbatim(
      "Dave, no latency events were recorded: cuckood does not sample latency events. Per "
      "command latency percentiles are in INFO latencystats.\n");
}

void LatencyHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "LATENCY",
            {"DOCTOR", "    Return a human readable latency analysis report.", "GRAPH <event>",
             "    Return an ASCII latency graph for the <event> class.", "HISTORY <event>",
             "    Return time-latency samples for the <event> class.", "LATEST",
             "    Return the latest latency samples for all events.", "RESET [<event> ...]",
             "    Reset latency data of one or more <event> classes.",
             "    (default: reset all data for all event classes)"});
}

// ---- small commands -----------------------------------------------------------------------------

void LolwutCommand(CommandContext& ctx) {
  ctx.out.Verbatim("Cuckoo filters, one fingerprint at a time.\nRedis ver. 7.0.15\n");
}

void MonitorCommand(CommandContext& ctx) {
  ctx.out.Error("ERR MONITOR is not supported");
}

void ClusterDisabledCommand(CommandContext& ctx) {
  ctx.out.Error(kClusterDisabled);
}

// ---- registration -------------------------------------------------------------------------------

CommandSpec Row(std::string name, int arity, uint32_t flags, Handler handler, std::string summary,
                std::string since, std::vector<std::string> acl = {},
                std::vector<CommandArgDoc> args = {}, std::string complexity = "O(1)") {
  CommandSpec s;
  s.name = std::move(name);
  s.arity = arity;
  s.flags = flags;
  s.handler = handler;
  s.summary = std::move(summary);
  s.since = std::move(since);
  s.group = "server";
  s.complexity = std::move(complexity);
  s.acl_categories = std::move(acl);
  s.args = std::move(args);
  return s;
}

constexpr uint32_t kAdm = kAdmin | kNoScript | kLoading | kStale;
constexpr uint32_t kHelp = kLoading | kStale;

CommandSpec ConfigSpec() {
  auto config =
      ContainerSpec("config", "A container for server configuration commands", "2.0.0", "server");
  config.subcommands.push_back(
      Row("config|get", -3, kAdm, ConfigGetCommand, "Get the values of configuration parameters",
          "2.0.0", {}, {{"parameter", "string", "", false, true}},
          "O(N) when N is the number of configuration parameters provided"));
  config.subcommands.push_back(Row(
      "config|set", -4, kAdm, ConfigSetCommand, "Set configuration parameters to the given values",
      "2.0.0", {}, {{"parameter", "string", "", false, true}, {"value", "string", "", false, true}},
      "O(N) when N is the number of configuration parameters provided"));
  config.subcommands.push_back(Row("config|resetstat", 2, kAdm, ConfigResetStatCommand,
                                   "Reset the stats returned by INFO", "2.0.0"));
  config.subcommands.push_back(
      Row("config|rewrite", 2, kAdm, ConfigRewriteCommand,
          "Rewrite the configuration file with the in memory configuration", "2.8.0"));
  config.subcommands.push_back(Row("config|help", 2, kHelp, ConfigHelpCommand,
                                   "Show helpful text about the different subcommands", "5.0.0",
                                   {"@slow"}));
  return config;
}

CommandSpec SlowlogSpec() {
  const std::vector<std::string> acl = {"@admin", "@slow", "@dangerous"};
  auto slowlog = ContainerSpec("slowlog", "A container for slow log commands", "2.2.12", "server");
  slowlog.subcommands.push_back(Row("slowlog|get", -2, kAdmin | kLoading | kStale,
                                    SlowlogGetCommand, "Get the slow log's entries", "2.2.12", acl,
                                    {{"count", "integer", "", true, false}},
                                    "O(N) where N is the number of entries returned"));
  slowlog.subcommands.push_back(Row("slowlog|len", 2, kAdmin | kLoading | kStale, SlowlogLenCommand,
                                    "Get the slow log's length", "2.2.12", acl));
  slowlog.subcommands.push_back(Row("slowlog|reset", 2, kAdmin | kLoading | kStale,
                                    SlowlogResetCommand, "Clear all entries from the slow log",
                                    "2.2.12", acl, {},
                                    "O(N) where N is the number of entries "
                                    "in the slowlog"));
  slowlog.subcommands.push_back(Row("slowlog|help", 2, kHelp, SlowlogHelpCommand,
                                    "Show helpful text about the different subcommands", "6.2.0",
                                    {"@slow"}));
  return slowlog;
}

CommandSpec LatencySpec() {
  auto latency =
      ContainerSpec("latency", "A container for latency diagnostics commands", "2.8.13", "server");
  auto& subs = latency.subcommands;
  subs.push_back(Row("latency|latest", 2, kAdm, EmptyArrayCommand,
                     "Return the latest latency samples for all events", "2.8.13"));
  subs.push_back(Row("latency|history", 3, kAdm, EmptyArrayCommand,
                     "Return timestamp-latency samples for the event", "2.8.13", {},
                     {{"event", "string", "", false, false}}));
  subs.push_back(Row("latency|reset", -2, kAdm, LatencyResetCommand,
                     "Reset latency data for one or more events", "2.8.13", {},
                     {{"event", "string", "", true, true}}));
  subs.push_back(Row("latency|graph", 3, kAdm, LatencyGraphCommand,
                     "Return a latency graph for the event", "2.8.13", {},
                     {{"event", "string", "", false, false}}));
  subs.push_back(Row("latency|doctor", 2, kAdm, LatencyDoctorCommand,
                     "Return a human readable latency analysis report", "2.8.13"));
  subs.push_back(Row("latency|help", 2, kHelp, LatencyHelpCommand,
                     "Show helpful text about the different subcommands", "2.8.13", {"@slow"}));
  return latency;
}

}  // namespace

void RegisterServerCommands(CommandTable& table) {
  table.Add(Row("info", -1, kLoading | kStale, InfoCommand,
                "Get information and statistics about the server", "1.0.0", {"@slow", "@dangerous"},
                {{"section", "string", "", true, true}}));
  table.Add(ConfigSpec());
  table.Add(Row("time", 1, kLoading | kStale | kFast, TimeCommand, "Return the current server time",
                "2.6.0", {"@fast"}));
  table.Add(Row("lastsave", 1, kLoading | kStale | kFast, LastSaveCommand,
                "Get the UNIX time stamp of the last successful save to disk", "1.0.0",
                {"@admin", "@fast", "@dangerous"}));
  table.Add(Row("save", 1, kAdmin | kNoScript, SaveCommand,
                "Synchronously save the dataset to disk", "1.0.0", {}, {},
                "O(N) where N is the total number of keys in all databases"));
  table.Add(Row("bgsave", -1, kAdmin | kNoScript, BgSaveCommand,
                "Asynchronously save the dataset to disk", "1.0.0", {},
                {{"schedule", "pure-token", "SCHEDULE", true, false}},
                "O(N) where N is the total number of keys in all databases"));
  table.Add(Row("bgrewriteaof", 1, kAdmin | kNoScript, BgRewriteAofCommand,
                "Asynchronously rewrite the append-only file", "1.0.0"));
  table.Add(Row("shutdown", -1, kAdm, ShutdownCommand,
                "Synchronously save the dataset to disk and then shut down the server", "1.0.0", {},
                {{"nosave_save", "oneof", "NOSAVE|SAVE", true, false},
                 {"now", "pure-token", "NOW", true, false},
                 {"force", "pure-token", "FORCE", true, false},
                 {"abort", "pure-token", "ABORT", true, false}},
                "O(N) when saving, where N is the total number of keys in all databases when "
                "saving data, otherwise O(1)"));
  table.Add(SlowlogSpec());
  table.Add(LatencySpec());
  table.Add(Row("lolwut", -1, kReadOnly | kFast, LolwutCommand,
                "Display some computer art and "
                "the Redis version",
                "5.0.0", {}, {{"version", "integer", "VERSION", true, false}}));
  table.Add(DebugCommandSpec());
  table.Add(Row("monitor", 1, kAdm, MonitorCommand,
                "Listen for all requests received by the server in real time", "1.0.0"));
  for (const char* name : {"readonly", "readwrite"}) {
    auto row = Row(name, 1, kLoading | kStale | kFast, ClusterDisabledCommand,
                   std::string(name) == "readonly"
                       ? "Enables read queries for a connection to a cluster replica node"
                       : "Disables read queries for a connection to a cluster replica node",
                   "3.0.0", {"@fast", "@connection"});
    row.group = "cluster";
    table.Add(std::move(row));
  }
}

}  // namespace cuckood::server

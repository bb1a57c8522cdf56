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
  const Config cfg = ctx.server.live_config().Get();
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
  const Config before = ctx.server.live_config().Get();
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (auto err = ctx.server.live_config().Set(pairs[i].first, pairs[i].second)) {
      for (size_t j = 0; j < i; ++j) {
        (void)ctx.server.live_config().Set(pairs[j].first, FindOption(pairs[j].first)->get(before));
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
  if (auto err =
          RewriteConfigFile(ctx.server.process().config_file, ctx.server.live_config().Get())) {
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
  const fs::path dir = ctx.server.live_config().Get().dir;
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

constexpr uint32_t kAdm = kAdmin | kNoScript | kLoading | kStale;
constexpr uint32_t kHelp = kLoading | kStale;

CommandSpec ConfigSpec() {
  CommandSpec config = CommandSpec{
      .name = "config",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for server configuration commands",
      .since = "2.0.0",
      .group = "server",
      .complexity = "Depends on subcommand.",
  };
  config.subcommands.push_back(CommandSpec{
      .name = "config|get",
      .arity = -3,
      .flags = kAdm,
      .handler = ConfigGetCommand,
      .summary = "Get the values of configuration parameters",
      .since = "2.0.0",
      .group = "server",
      .complexity = "O(N) when N is the number of configuration parameters provided",
      .args = {{"parameter", "string", "", false, true}},
  });
  config.subcommands.push_back(CommandSpec{
      .name = "config|set",
      .arity = -4,
      .flags = kAdm,
      .handler = ConfigSetCommand,
      .summary = "Set configuration parameters to the given values",
      .since = "2.0.0",
      .group = "server",
      .complexity = "O(N) when N is the number of configuration parameters provided",
      .args = {{"parameter", "string", "", false, true}, {"value", "string", "", false, true}},
      .tips = {"request_policy:all_nodes", "response_policy:all_succeeded"},
  });
  config.subcommands.push_back(CommandSpec{
      .name = "config|resetstat",
      .arity = 2,
      .flags = kAdm,
      .handler = ConfigResetStatCommand,
      .summary = "Reset the stats returned by INFO",
      .since = "2.0.0",
      .group = "server",
      .complexity = "O(1)",
  });
  config.subcommands.push_back(CommandSpec{
      .name = "config|rewrite",
      .arity = 2,
      .flags = kAdm,
      .handler = ConfigRewriteCommand,
      .summary = "Rewrite the configuration file with the in memory configuration",
      .since = "2.8.0",
      .group = "server",
      .complexity = "O(1)",
  });
  config.subcommands.push_back(CommandSpec{
      .name = "config|help",
      .arity = 2,
      .flags = kHelp,
      .handler = ConfigHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "5.0.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  return config;
}

CommandSpec SlowlogSpec() {
  const std::vector<std::string> acl = {"admin", "slow", "dangerous"};
  CommandSpec slowlog = CommandSpec{
      .name = "slowlog",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for slow log commands",
      .since = "2.2.12",
      .group = "server",
      .complexity = "Depends on subcommand.",
  };
  slowlog.subcommands.push_back(CommandSpec{
      .name = "slowlog|get",
      .arity = -2,
      .flags = kAdmin | kLoading | kStale,
      .handler = SlowlogGetCommand,
      .summary = "Get the slow log's entries",
      .since = "2.2.12",
      .group = "server",
      .complexity = "O(N) where N is the number of entries returned",
      .args = {{"count", "integer", "", true, false}},
      .acl_categories = acl,
      .tips = {"request_policy:all_nodes", "nondeterministic_output"},
  });
  slowlog.subcommands.push_back(CommandSpec{
      .name = "slowlog|len",
      .arity = 2,
      .flags = kAdmin | kLoading | kStale,
      .handler = SlowlogLenCommand,
      .summary = "Get the slow log's length",
      .since = "2.2.12",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = acl,
      .tips = {"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"},
  });
  slowlog.subcommands.push_back(CommandSpec{
      .name = "slowlog|reset",
      .arity = 2,
      .flags = kAdmin | kLoading | kStale,
      .handler = SlowlogResetCommand,
      .summary = "Clear all entries from the slow log",
      .since = "2.2.12",
      .group = "server",
      .complexity = "O(N) where N is the number of entries "
                    "in the slowlog",
      .acl_categories = acl,
      .tips = {"request_policy:all_nodes", "response_policy:all_succeeded"},
  });
  slowlog.subcommands.push_back(CommandSpec{
      .name = "slowlog|help",
      .arity = 2,
      .flags = kHelp,
      .handler = SlowlogHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "6.2.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  return slowlog;
}

CommandSpec LatencySpec() {
  CommandSpec latency = CommandSpec{
      .name = "latency",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for latency diagnostics commands",
      .since = "2.8.13",
      .group = "server",
      .complexity = "Depends on subcommand.",
  };
  auto& subs = latency.subcommands;
  subs.push_back(CommandSpec{
      .name = "latency|latest",
      .arity = 2,
      .flags = kAdm,
      .handler = EmptyArrayCommand,
      .summary = "Return the latest latency samples for all events",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .tips = {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
  });
  subs.push_back(CommandSpec{
      .name = "latency|history",
      .arity = 3,
      .flags = kAdm,
      .handler = EmptyArrayCommand,
      .summary = "Return timestamp-latency samples for the event",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .args = {{"event", "string", "", false, false}},
      .tips = {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
  });
  subs.push_back(CommandSpec{
      .name = "latency|reset",
      .arity = -2,
      .flags = kAdm,
      .handler = LatencyResetCommand,
      .summary = "Reset latency data for one or more events",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .args = {{"event", "string", "", true, true}},
      .tips = {"request_policy:all_nodes", "response_policy:all_succeeded"},
  });
  subs.push_back(CommandSpec{
      .name = "latency|graph",
      .arity = 3,
      .flags = kAdm,
      .handler = LatencyGraphCommand,
      .summary = "Return a latency graph for the event",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .args = {{"event", "string", "", false, false}},
      .tips = {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
  });
  subs.push_back(CommandSpec{
      .name = "latency|doctor",
      .arity = 2,
      .flags = kAdm,
      .handler = LatencyDoctorCommand,
      .summary = "Return a human readable latency analysis report",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .tips = {"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"},
  });
  subs.push_back(CommandSpec{
      .name = "latency|help",
      .arity = 2,
      .flags = kHelp,
      .handler = LatencyHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "2.8.13",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"slow"},
  });
  return latency;
}

}  // namespace

void RegisterServerCommands(CommandTable& table) {
  table.Add(CommandSpec{
      .name = "info",
      .arity = -1,
      .flags = kLoading | kStale,
      .handler = InfoCommand,
      .summary = "Get information and statistics about the server",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
      .args = {{"section", "string", "", true, true}},
      .acl_categories = {"slow", "dangerous"},
      .tips = {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
  });
  table.Add(ConfigSpec());
  table.Add(CommandSpec{
      .name = "time",
      .arity = 1,
      .flags = kLoading | kStale | kFast,
      .handler = TimeCommand,
      .summary = "Return the current server time",
      .since = "2.6.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"fast"},
      .tips = {"nondeterministic_output"},
  });
  table.Add(CommandSpec{
      .name = "lastsave",
      .arity = 1,
      .flags = kLoading | kStale | kFast,
      .handler = LastSaveCommand,
      .summary = "Get the UNIX time stamp of the last successful save to disk",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
      .acl_categories = {"admin", "fast", "dangerous"},
      .tips = {"nondeterministic_output"},
  });
  table.Add(CommandSpec{
      .name = "save",
      .arity = 1,
      .flags = kAdmin | kNoScript,
      .handler = SaveCommand,
      .summary = "Synchronously save the dataset to disk",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(N) where N is the total number of keys in all databases",
  });
  table.Add(CommandSpec{
      .name = "bgsave",
      .arity = -1,
      .flags = kAdmin | kNoScript,
      .handler = BgSaveCommand,
      .summary = "Asynchronously save the dataset to disk",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(N) where N is the total number of keys in all databases",
      .args = {{"schedule", "pure-token", "SCHEDULE", true, false}},
  });
  table.Add(CommandSpec{
      .name = "bgrewriteaof",
      .arity = 1,
      .flags = kAdmin | kNoScript,
      .handler = BgRewriteAofCommand,
      .summary = "Asynchronously rewrite the append-only file",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
  });
  table.Add(CommandSpec{
      .name = "shutdown",
      .arity = -1,
      .flags = kAdm,
      .handler = ShutdownCommand,
      .summary = "Synchronously save the dataset to disk and then shut down the server",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(N) when saving, where N is the total number of keys in all databases when "
                    "saving data, otherwise O(1)",
      .args = {{"nosave_save", "oneof", "NOSAVE|SAVE", true, false},
               {"now", "pure-token", "NOW", true, false},
               {"force", "pure-token", "FORCE", true, false},
               {"abort", "pure-token", "ABORT", true, false}},
  });
  table.Add(SlowlogSpec());
  table.Add(LatencySpec());
  table.Add(CommandSpec{
      .name = "lolwut",
      .arity = -1,
      .flags = kReadOnly | kFast,
      .handler = LolwutCommand,
      .summary = "Display some computer art and "
                 "the Redis version",
      .since = "5.0.0",
      .group = "server",
      .complexity = "O(1)",
      .args = {{"version", "integer", "VERSION", true, false}},
  });
  table.Add(DebugCommandSpec());
  table.Add(CommandSpec{
      .name = "monitor",
      .arity = 1,
      .flags = kAdm,
      .handler = MonitorCommand,
      .summary = "Listen for all requests received by the server in real time",
      .since = "1.0.0",
      .group = "server",
      .complexity = "O(1)",
  });
  for (const char* name : {"readonly", "readwrite"}) {
    CommandSpec row = CommandSpec{
        .name = name,
        .arity = 1,
        .flags = kLoading | kStale | kFast,
        .handler = ClusterDisabledCommand,
        .summary = std::string(name) == "readonly"
                       ? "Enables read queries for a connection to a cluster replica node"
                       : "Disables read queries for a connection to a cluster replica node",
        .since = "3.0.0",
        .group = "cluster",
        .complexity = "O(1)",
        .acl_categories = {"fast", "connection"},
    };
    table.Add(std::move(row));
  }
}

}  // namespace cuckood::server

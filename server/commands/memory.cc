// MEMORY (USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP) and our own DISK USAGE.
//
// MEMORY USAGE answers what the key would cost a Redis server holding it in memory: for a
// filter, what RedisBloom reports (its struct and every bucket, plus the key and dict entry); for a
// string, the key, the value and Redis's per-key overhead. DISK USAGE answers what it
// costs here: RocksDB's estimate of the bytes of its metadata and pages.
#include <malloc.h>

#include <string>

#include "core/filter.h"
#include "server/command.h"
#include "server/commands/family.h"
#include "server/connection.h"
#include "server/server.h"
#include "server/util.h"
#include "storage/format.h"

namespace cuckood::server {
namespace {

uint64_t RoundUp8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}

// Redis's layout for a string key: the key's sds, a dict entry, and the value object (strings of
// up to 44 bytes share one allocation with their object header).
uint64_t StringUsage(std::string_view key, uint64_t value_len) {
  constexpr uint64_t kDictEntry = 24;
  constexpr uint64_t kObject = 16;
  constexpr uint64_t kSdsOverhead = 4;  // sdshdr8 + terminating NUL
  constexpr uint64_t kEmbstrMax = 44;
  uint64_t total = RoundUp8(key.size() + kSdsOverhead) + kDictEntry;
  if (value_len <= kEmbstrMax) {
    total += RoundUp8(kObject + kSdsOverhead + value_len);
  } else {
    total += kObject + RoundUp8(value_len + kSdsOverhead + 5);
  }
  return total;
}

// jemalloc's size class of an allocation of n bytes (what Redis's zmalloc_size reports).
uint64_t SizeClass(uint64_t n) {
  if (n <= 8) {
    return 8;
  }
  if (n <= 128) {
    return (n + 15) & ~uint64_t{15};
  }
  // Above 128: four classes per power of two.
  uint64_t pow2 = 128;
  while (pow2 * 2 < n) {
    pow2 *= 2;
  }
  const uint64_t step = pow2 / 4;
  return (n + step - 1) / step * step;
}

// What Redis with RedisBloom reports for a filter key: the module's size of the filter (CF.INFO's
// Size), the key's sds allocation and the dict entry (1112 for `CF.RESERVE cf 1000`).
uint64_t FilterUsage(std::string_view key, const storage::Metadata& meta) {
  constexpr uint64_t kDictEntry = 24;
  const uint64_t sds_header = key.size() < 256 ? 3 : (key.size() < 65536 ? 5 : 9);
  return core::InfoSize(meta.cuckoo.filter) + SizeClass(sds_header + key.size() + 1) + kDictEntry;
}

// MEMORY USAGE key [SAMPLES count]: samples is validated as Redis does, then unused (a filter's
// size is exact).
void MemoryUsageCommand(CommandContext& ctx) {
  for (size_t j = 3; j < ctx.argv.size(); ++j) {
    if (EqualsIgnoreCase(ctx.argv[j], "samples") && j + 1 < ctx.argv.size()) {
      auto n = ParseInt64(ctx.argv[j + 1]);
      if (!n) {
        ctx.out.Error(kNotIntegerError);
        return;
      }
      if (*n < 0) {
        ctx.out.Error(kSyntaxError);
        return;
      }
      ++j;
    } else {
      ctx.out.Error(kSyntaxError);
      return;
    }
  }
  auto m = ctx.server.db().Get(ctx.scope, ctx.ns, ctx.argv[2]);
  if (!m.ok()) {
    ReplyStatusError(ctx.out, m.status());
    return;
  }
  if (!m->has_value()) {
    ctx.out.Null();
    return;
  }
  const auto& meta = **m;
  const uint64_t bytes = meta.type == storage::KeyType::kCuckoo
                             ? FilterUsage(ctx.argv[2], meta)
                             : StringUsage(ctx.argv[2], meta.value.size());
  ctx.out.Integer(static_cast<int64_t>(bytes));
}

void MemoryStatsCommand(CommandContext& ctx) {
  const ProcessMemory mem = ReadProcessMemory();
  const storage::EngineStats es = ctx.server.engine().Stats();
  uint64_t clients = 0;
  for (const auto& conn : ctx.server.clients().All()) {
    clients += conn->query_buffer() + conn->output_pending();
  }
  const uint64_t keys = es.estimated_keys_metadata;
  const uint64_t overhead = clients;
  const uint64_t dataset = mem.used > overhead ? mem.used - overhead : 0;
  auto& out = ctx.out;
  out.MapHeader(19);
  auto field = [&out](std::string_view name, uint64_t v) {
    out.Bulk(name);
    out.Integer(static_cast<int64_t>(v));
  };
  field("peak.allocated", mem.peak);
  field("total.allocated", mem.used);
  field("startup.allocated", 0);
  field("replication.backlog", 0);
  field("clients.slaves", 0);
  field("clients.normal", clients);
  field("cluster.links", 0);
  field("aof.buffer", 0);
  field("overhead.total", overhead);
  field("keys.count", keys);
  field("keys.bytes-per-key", keys == 0 ? 0 : mem.used / keys);
  field("dataset.bytes", dataset);
  out.Bulk("dataset.percentage");
  out.Double(mem.used == 0 ? 0.0 : 100.0 * static_cast<double>(dataset) / mem.used);
  out.Bulk("peak.percentage");
  out.Double(mem.peak == 0 ? 0.0 : 100.0 * static_cast<double>(mem.used) / mem.peak);
  out.Bulk("fragmentation");
  out.Double(mem.used == 0 ? 0.0 : static_cast<double>(mem.rss) / mem.used);
  field("fragmentation.bytes", mem.rss > mem.used ? mem.rss - mem.used : 0);
  field("rocksdb.block-cache", es.block_cache_usage);
  field("rocksdb.memtables", es.memtable_bytes);
  field("rocksdb.sst", es.sst_bytes);
}

void MemoryDoctorCommand(CommandContext& ctx) {
  ctx.out.Verbatim(
      "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
      "occurs on this base.\n");
}

void MemoryMallocStatsCommand(CommandContext& ctx) {
  ctx.out.Verbatim("Stats not supported for the current allocator");
}

void MemoryPurgeCommand(CommandContext& ctx) {
  malloc_trim(0);
  ctx.out.SimpleString("OK");
}

void MemoryHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "MEMORY",
            {"DOCTOR", "    Return a report of memory problems.", "MALLOC-STATS",
             "    Return statistics from the memory allocator.", "PURGE",
             "    Ask the allocator to give unused memory back to the system.", "STATS",
             "    Return information about the memory usage of the server.",
             "USAGE <key> [SAMPLES <count>]",
             "    Return the bytes a Redis server would hold in memory for <key>."});
}

// DISK USAGE key: approximate bytes of the key on disk and in memtables; nil when absent.
void DiskUsageCommand(CommandContext& ctx) {
  auto r = ctx.server.db().DiskUsage(ctx.scope, ctx.ns, ctx.argv[2]);
  if (!r.ok()) {
    if (r.status().code() == storage::Code::kNotFound) {
      ctx.out.Null();
    } else {
      ReplyStatusError(ctx.out, r.status());
    }
    return;
  }
  ctx.out.Integer(static_cast<int64_t>(*r));
}

void DiskHelpCommand(CommandContext& ctx) {
  ReplyHelp(ctx.out, "DISK",
            {"USAGE <key>",
             "    Return the approximate bytes <key> takes on disk (metadata and pages)."});
}

}  // namespace

void RegisterMemoryCommands(CommandTable& table) {
  CommandSpec memory = CommandSpec{
      .name = "memory",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for memory diagnostics commands",
      .since = "4.0.0",
      .group = "server",
      .complexity = "Depends on subcommand.",
  };
  CommandSpec usage = CommandSpec{
      .name = "memory|usage",
      .arity = -3,
      .flags = kReadOnly,
      .first_key = 2,
      .last_key = 2,
      .step = 1,
      .handler = MemoryUsageCommand,
      .summary = "Estimate the memory usage of a key",
      .since = "4.0.0",
      .group = "server",
      .complexity = "O(N) where N is the number of samples.",
      .args = {{"key", "key", "", false, false}, {"count", "integer", "SAMPLES", true, false}},
      .acl_categories = {"read", "slow"},
  };
  memory.subcommands.push_back(std::move(usage));
  memory.subcommands.push_back(CommandSpec{
      .name = "memory|stats",
      .arity = 2,
      .handler = MemoryStatsCommand,
      .summary = "Show memory usage details",
      .since = "4.0.0",
      .group = "server",
      .complexity = "O(1)",
      .tips = {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
  });
  memory.subcommands.push_back(CommandSpec{
      .name = "memory|doctor",
      .arity = 2,
      .handler = MemoryDoctorCommand,
      .summary = "Outputs memory problems report",
      .since = "4.0.0",
      .group = "server",
      .complexity = "O(1)",
      .tips = {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
  });
  memory.subcommands.push_back(CommandSpec{
      .name = "memory|malloc-stats",
      .arity = 2,
      .handler = MemoryMallocStatsCommand,
      .summary = "Show allocator internal stats",
      .since = "4.0.0",
      .group = "server",
      .complexity = "Depends on how much memory is allocated, could be slow",
      .tips = {"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
  });
  memory.subcommands.push_back(CommandSpec{
      .name = "memory|purge",
      .arity = 2,
      .handler = MemoryPurgeCommand,
      .summary = "Ask the allocator to release memory",
      .since = "4.0.0",
      .group = "server",
      .complexity = "Depends on how much memory is allocated, could be slow",
      .tips = {"request_policy:all_shards", "response_policy:all_succeeded"},
  });
  memory.subcommands.push_back(CommandSpec{
      .name = "memory|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = MemoryHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "4.0.0",
      .group = "server",
      .complexity = "O(1)",
  });
  table.Add(std::move(memory));

  CommandSpec disk = CommandSpec{
      .name = "disk",
      .arity = -2,
      .handler = RunSubcommand,
      .summary = "A container for disk usage commands (cuckood)",
      .since = "7.0.0",
      .group = "server",
      .complexity = "Depends on subcommand.",
  };
  CommandSpec disk_usage = CommandSpec{
      .name = "disk|usage",
      .arity = 3,
      .flags = kReadOnly,
      .first_key = 2,
      .last_key = 2,
      .step = 1,
      .handler = DiskUsageCommand,
      .summary = "Estimate the bytes a key takes on disk",
      .since = "7.0.0",
      .group = "server",
      .complexity = "O(1)",
      .args = {{"key", "key", "", false, false}},
      .acl_categories = {"read", "slow"},
  };
  disk.subcommands.push_back(std::move(disk_usage));
  disk.subcommands.push_back(CommandSpec{
      .name = "disk|help",
      .arity = 2,
      .flags = kLoading | kStale,
      .handler = DiskHelpCommand,
      .summary = "Show helpful text about the different subcommands",
      .since = "7.0.0",
      .group = "server",
      .complexity = "O(1)",
  });
  table.Add(std::move(disk));
}

}  // namespace cuckood::server

// INFO [section ...]: Redis 7.0's sections and field names, in Redis's order, plus a "rocksdb"
// section of our own. Sections are chosen case-insensitively; "default" (also: no argument),
// "all" and "everything" select groups; unknown names select nothing. The text is "# Title"
// headers and "field:value" lines ending in CRLF, sections separated by an empty line; RESP3
// gets it as a verbatim string.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "core/sanitizers.h"
#include "server/command.h"
#include "server/commands/family.h"
#include "server/connection.h"
#include "server/pubsub.h"
#include "server/replication.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

constexpr std::array<std::string_view, 14> kSectionOrder = {
    "server",  "clients",      "memory",     "persistence",  "stats",   "replication", "cpu",
    "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace",    "rocksdb"};
constexpr std::array<std::string_view, 12> kDefaultSections = {
    "server", "clients", "memory",     "persistence", "stats",    "replication",
    "cpu",    "modules", "errorstats", "cluster",     "keyspace", "rocksdb"};

std::string Format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

// Collects "field:value" lines of one section.
class Lines {
 public:
  explicit Lines(std::string* out) : out_(out) {}
  void Add(std::string_view field, std::string_view value) {
    out_->append(field);
    out_->push_back(':');
    out_->append(value);
    out_->append("\r\n");
  }
  void Add(std::string_view field, uint64_t value) { Add(field, std::to_string(value)); }
  void Add(std::string_view field, int64_t value) { Add(field, std::to_string(value)); }
  void Add(std::string_view field, int value) { Add(field, std::to_string(value)); }
  void Add(std::string_view field, const char* value) { Add(field, std::string_view(value)); }

 private:
  std::string* out_;
};

std::string RusageTime(const struct timeval& tv) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%ld.%06ld", static_cast<long>(tv.tv_sec),
                static_cast<long>(tv.tv_usec));
  return buf;
}

void ServerSection(Server& server, Lines& l) {
  const Config cfg = server.live_config().Get();
  struct utsname name {};
  uname(&name);
  const auto now = std::chrono::system_clock::now();
  const int64_t now_us =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const int64_t uptime = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::steady_clock::now() - server.process().start_time)
                             .count();
  l.Add("redis_version", "7.0.15");
  l.Add("redis_git_sha1", "00000000");
  l.Add("redis_git_dirty", 0);
  l.Add("redis_build_id", "0");
  l.Add("redis_mode", server.cluster() != nullptr ? "cluster" : "standalone");
  l.Add("os", std::string(name.sysname) + " " + name.release + " " + name.machine);
  l.Add("arch_bits", static_cast<int>(sizeof(void*) * 8));
  l.Add("monotonic_clock", "POSIX clock_gettime");
  l.Add("multiplexing_api", "epoll");
  l.Add("atomicvar_api", "c11-builtin");
  l.Add("gcc_version", std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
                           std::to_string(__GNUC_PATCHLEVEL__));
  l.Add("process_id", static_cast<int64_t>(getpid()));
  l.Add("process_supervised", "no");
  l.Add("run_id", server.process().run_id);
  l.Add("tcp_port", server.process().port != 0 ? server.process().port : cfg.port);
  l.Add("server_time_usec", now_us);
  l.Add("uptime_in_seconds", uptime);
  l.Add("uptime_in_days", uptime / 86400);
  l.Add("hz", 10);
  l.Add("configured_hz", 10);
  l.Add("lru_clock", (now_us / 1000000) & ((1 << 24) - 1));
  l.Add("executable", server.process().executable);
  l.Add("config_file", server.process().config_file);
  l.Add("io_threads_active", 0);
  l.Add("cuckood_version", "0.1.0");
  l.Add("cuckood_io_threads", server.process().io_threads);
  // (adaptive-io-threads: how many of them serve connections now, and how often that changed)
  l.Add("cuckood_io_threads_in_use", static_cast<uint64_t>(server.io_threads_in_use()));
  l.Add("cuckood_io_threads_changes", server.io_thread_changes());
}

void ClientsSection(Server& server, Lines& l) {
  uint64_t max_in = 0;
  uint64_t max_out = 0;
  for (const auto& conn : server.clients().All()) {
    max_in = std::max<uint64_t>(max_in, conn->query_buffer());
    max_out = std::max<uint64_t>(max_out, conn->output_pending());
  }
  l.Add("connected_clients", static_cast<uint64_t>(server.clients().connected()));
  l.Add("cluster_connections", 0);
  l.Add("maxclients", server.live_config().Get().maxclients);
  l.Add("client_recent_max_input_buffer", max_in);
  l.Add("client_recent_max_output_buffer", max_out);
  l.Add("blocked_clients", 0);
  l.Add("tracking_clients", 0);
  l.Add("clients_in_timeout_table", 0);
}

void MemorySection(Server& server, Lines& l) {
  const ProcessMemory mem = ReadProcessMemory();
  const uint64_t total_system =
      static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const auto es = server.engine().Stats();
  l.Add("used_memory", mem.used);
  l.Add("used_memory_human", BytesToHuman(mem.used));
  l.Add("used_memory_rss", mem.rss);
  l.Add("used_memory_rss_human", BytesToHuman(mem.rss));
  l.Add("used_memory_peak", mem.peak);
  l.Add("used_memory_peak_human", BytesToHuman(mem.peak));
  l.Add("used_memory_peak_perc",
        Format("%.2f%%", mem.peak == 0 ? 0.0
                                       : 100.0 * static_cast<double>(mem.used) /
                                             static_cast<double>(mem.peak)));
  l.Add("total_system_memory", total_system);
  l.Add("total_system_memory_human", BytesToHuman(total_system));
  l.Add("maxmemory", 0);
  l.Add("maxmemory_human", "0B");
  l.Add("maxmemory_policy", "noeviction");
  l.Add("mem_fragmentation_ratio",
        Format("%.2f",
               mem.used == 0 ? 0.0 : static_cast<double>(mem.rss) / static_cast<double>(mem.used)));
  l.Add("mem_fragmentation_bytes", static_cast<int64_t>(mem.rss) - static_cast<int64_t>(mem.used));
  l.Add("mem_not_counted_for_evict", 0);
  l.Add("mem_replication_backlog", 0);
  l.Add("mem_clients_slaves", 0);
  l.Add("mem_clients_normal", 0);
  l.Add("mem_aof_buffer", 0);
  // (a sanitized build's allocator is the sanitizer's: malloc-huge-pages does not reach it)
  l.Add("mem_allocator", core::kSanitized ? core::kSanitizer : "libc");
  l.Add("active_defrag_running", 0);
  l.Add("lazyfree_pending_objects", 0);
  l.Add("lazyfreed_objects", 0);
  l.Add("used_memory_rocksdb", es.block_cache_usage + es.memtable_bytes);
}

void PersistenceSection(Server& server, Lines& l) {
  const uint64_t last_save = server.engine().last_save_unix();
  l.Add("loading", 0);
  l.Add("async_loading", 0);
  l.Add("current_cow_peak", 0);
  l.Add("current_cow_size", 0);
  l.Add("current_cow_size_age", 0);
  l.Add("current_fork_perc", "0.00");
  l.Add("current_save_keys_processed", 0);
  l.Add("current_save_keys_total", 0);
  l.Add("rdb_changes_since_last_save", 0);
  l.Add("rdb_bgsave_in_progress", 0);
  l.Add("rdb_last_save_time",
        last_save != 0 ? static_cast<int64_t>(last_save) : server.process().start_unix);
  l.Add("rdb_last_bgsave_status", "ok");
  l.Add("rdb_last_bgsave_time_sec", -1);
  l.Add("rdb_current_bgsave_time_sec", -1);
  l.Add("rdb_saves", 0);
  l.Add("rdb_last_cow_size", 0);
  l.Add("rdb_last_load_keys_expired", 0);
  l.Add("rdb_last_load_keys_loaded", 0);
  l.Add("aof_enabled", 1);
  l.Add("aof_rewrite_in_progress", 0);
  l.Add("aof_rewrite_scheduled", 0);
  l.Add("aof_last_rewrite_time_sec", -1);
  l.Add("aof_current_rewrite_time_sec", -1);
  l.Add("aof_last_bgrewrite_status", "ok");
  l.Add("aof_rewrites", 0);
  l.Add("aof_rewrites_consecutive_failures", 0);
  l.Add("aof_last_write_status", "ok");
  l.Add("aof_last_cow_size", 0);
  l.Add("module_fork_in_progress", 0);
  l.Add("module_fork_last_cow_size", 0);
  l.Add("appendfsync", server.live_config().Get().appendfsync);
}

void StatsSection(Server& server, Lines& l) {
  Stats& s = server.stats();
  auto kbps = [](const std::atomic<int64_t>& x100) {
    return Format("%.2f", static_cast<double>(x100.load()) / 100.0);
  };
  l.Add("total_connections_received", s.total_connections_received.load());
  l.Add("total_commands_processed", s.total_commands_processed.load());
  l.Add("instantaneous_ops_per_sec", s.instantaneous_ops_per_sec.load());
  l.Add("total_net_input_bytes", s.total_net_input_bytes.load());
  l.Add("total_net_output_bytes", s.total_net_output_bytes.load());
  l.Add("total_net_repl_input_bytes", 0);
  l.Add("total_net_repl_output_bytes", 0);
  l.Add("instantaneous_input_kbps", kbps(s.instantaneous_input_kbps_x100));
  l.Add("instantaneous_output_kbps", kbps(s.instantaneous_output_kbps_x100));
  l.Add("instantaneous_input_repl_kbps", "0.00");
  l.Add("instantaneous_output_repl_kbps", "0.00");
  l.Add("rejected_connections", s.rejected_connections.load());
  l.Add("sync_full", 0);
  l.Add("sync_partial_ok", 0);
  l.Add("sync_partial_err", 0);
  l.Add("expired_keys", s.expired_keys.load());
  l.Add("expired_stale_perc", "0.00");
  l.Add("expired_time_cap_reached_count", 0);
  l.Add("expire_cycle_cpu_milliseconds", 0);
  l.Add("evicted_keys", 0);
  l.Add("evicted_clients", 0);
  l.Add("total_eviction_exceeded_time", 0);
  l.Add("current_eviction_exceeded_time", 0);
  l.Add("keyspace_hits", s.keyspace_hits.load());
  l.Add("keyspace_misses", s.keyspace_misses.load());
  l.Add("pubsub_channels", server.pubsub().NumChannels());
  l.Add("pubsub_patterns", server.pubsub().NumPat());
  l.Add("pubsubshard_channels", 0);
  l.Add("latest_fork_usec", 0);
  l.Add("total_forks", 0);
  l.Add("migrate_cached_sockets", 0);
  l.Add("slave_expires_tracked_keys", 0);
  l.Add("active_defrag_hits", 0);
  l.Add("active_defrag_misses", 0);
  l.Add("active_defrag_key_hits", 0);
  l.Add("active_defrag_key_misses", 0);
  l.Add("total_active_defrag_time", 0);
  l.Add("current_active_defrag_time", 0);
  l.Add("tracking_total_keys", 0);
  l.Add("tracking_total_items", 0);
  l.Add("tracking_total_prefixes", 0);
  l.Add("unexpected_error_replies", s.unexpected_error_replies.load());
  l.Add("total_error_replies", s.total_error_replies.load());
  l.Add("dump_payload_sanitizations", 0);
  l.Add("io_threaded_reads_processed", 0);
  l.Add("io_threaded_writes_processed", 0);
  l.Add("client_query_buffer_limit_disconnections",
        s.client_query_buffer_limit_disconnections.load());
  l.Add("tls_handshake_errors", s.tls_handshake_errors.load());
  l.Add("client_output_buffer_limit_disconnections", s.client_output_limit_disconnections.load());
  l.Add("protocol_errors", s.protocol_errors.load());
  l.Add("blocked_on_output", s.blocked_on_output.load());
  l.Add("write_groups", s.write_groups.load());
  l.Add("write_group_commands", s.write_group_commands.load());
  l.Add("combined_runs", s.combined_runs.load());
  l.Add("parked_commands", s.parked_commands.load());
  l.Add("client_moves", s.client_moves.load());
  l.Add("combined_calls", s.combined_calls.load());
}

void ReplicationSection(Server& server, std::string* text) {
  // (server/replication.cc writes the lines: role, links, offsets, and the RocksDB sequence)
  text->append(server.replication().InfoLines());
}

void CpuSection(Lines& l) {
  struct rusage self {};
  struct rusage children {};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  l.Add("used_cpu_sys", RusageTime(self.ru_stime));
  l.Add("used_cpu_user", RusageTime(self.ru_utime));
  l.Add("used_cpu_sys_children", RusageTime(children.ru_stime));
  l.Add("used_cpu_user_children", RusageTime(children.ru_utime));
}

void CommandStatsSection(Server& server, Lines& l) {
  for (const auto& [name, cs] : server.stats().All()) {
    const uint64_t calls = cs->calls.load();
    const uint64_t usec = cs->usec.load();
    const uint64_t rejected = cs->rejected_calls.load();
    const uint64_t failed = cs->failed_calls.load();
    if (calls == 0 && rejected == 0 && failed == 0) {
      continue;
    }
    const double per_call =
        calls == 0 ? 0.0 : static_cast<double>(usec) / static_cast<double>(calls);
    l.Add("cmdstat_" + name, "calls=" + std::to_string(calls) + ",usec=" + std::to_string(usec) +
                                 ",usec_per_call=" + Format("%.2f", per_call) +
                                 ",rejected_calls=" + std::to_string(rejected) +
                                 ",failed_calls=" + std::to_string(failed));
  }
}

void ErrorStatsSection(Server& server, Lines& l) {
  for (const auto& [prefix, count] : server.stats().Errors()) {
    l.Add("errorstat_" + prefix, "count=" + std::to_string(count));
  }
}

void LatencyStatsSection(Server& server, Lines& l) {
  for (const auto& [name, cs] : server.stats().All()) {
    if (cs->latency.count() == 0) {
      continue;
    }
    l.Add("latency_percentiles_usec_" + name,
          "p50=" + Format("%.3f", cs->latency.Percentile(50)) +
              ",p99=" + Format("%.3f", cs->latency.Percentile(99)) +
              ",p99.9=" + Format("%.3f", cs->latency.Percentile(99.9)));
  }
}

// Keys per database (a metadata range scan each; empty databases cost one seek). The expiry
// count is not tracked, so expires and avg_ttl read 0.
void KeyspaceSection(Server& server, Lines& l) {
  const int databases = std::min(server.live_config().Get().databases, 65536);
  for (int ns = 0; ns < databases; ++ns) {
    auto n = server.db().DbSize(server.db().Namespace(static_cast<uint16_t>(ns)));
    if (n.ok() && *n > 0) {
      l.Add("db" + std::to_string(ns), "keys=" + std::to_string(*n) + ",expires=0,avg_ttl=0");
    }
  }
}

void RocksDbSection(Server& server, Lines& l) {
  const auto es = server.engine().Stats();
  l.Add("block_cache_usage", es.block_cache_usage);
  l.Add("block_cache_capacity", es.block_cache_capacity);
  l.Add("memtable_bytes", es.memtable_bytes);
  l.Add("sst_bytes", es.sst_bytes);
  l.Add("pending_compaction_bytes", es.pending_compaction_bytes);
  l.Add("num_running_compactions", es.num_running_compactions);
  l.Add("num_running_flushes", es.num_running_flushes);
  l.Add("write_stall_micros", es.stall_micros);
  l.Add("write_stopped", es.write_stopped ? 1 : 0);
  {
    auto health = server.engine().WriteHealth();
    l.Add("write_error", health.ok() ? std::string("none") : health.message());
    l.Add("write_errors", server.engine().write_errors());
    l.Add("write_error_recoveries", server.engine().recoveries());
    l.Add("write_stall_errors", server.engine().stall_errors());
  }
  l.Add("estimated_keys_metadata", es.estimated_keys_metadata);
  l.Add("estimated_keys_pages", es.estimated_keys_pages);
  l.Add("pages_loaded", server.db().pages_loaded());
  auto& cache = server.db().cache();
  l.Add("cache_bytes", cache.bytes());
  l.Add("cache_capacity", cache.capacity());
  l.Add("cache_hits", cache.hits());
  l.Add("cache_misses", cache.misses());
  auto& chains = server.db().chain_indexes();
  l.Add("chain_indexes", chains.count());
  l.Add("chain_index_bytes", chains.bytes());
  l.Add("chain_index_builds", chains.builds());
}

std::string_view Title(std::string_view section) {
  if (section == "cpu") {
    return "CPU";
  }
  if (section == "rocksdb") {
    return "RocksDB";
  }
  return section;
}

void WriteSection(Server& server, std::string_view section, std::string* text) {
  if (!text->empty()) {
    text->append("\r\n");
  }
  std::string title(Title(section));
  if (section != "cpu" && section != "rocksdb") {
    title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
  }
  text->append("# " + title + "\r\n");
  Lines l(text);
  if (section == "server") {
    ServerSection(server, l);
  } else if (section == "clients") {
    ClientsSection(server, l);
  } else if (section == "memory") {
    MemorySection(server, l);
  } else if (section == "persistence") {
    PersistenceSection(server, l);
  } else if (section == "stats") {
    StatsSection(server, l);
  } else if (section == "replication") {
    ReplicationSection(server, text);
  } else if (section == "cpu") {
    CpuSection(l);
  } else if (section == "modules") {
    l.Add("module", "name=bf,ver=20820,api=1,filters=0,usedby=[],using=[],options=[]");
  } else if (section == "commandstats") {
    CommandStatsSection(server, l);
  } else if (section == "errorstats") {
    ErrorStatsSection(server, l);
  } else if (section == "latencystats") {
    LatencyStatsSection(server, l);
  } else if (section == "cluster") {
    l.Add("cluster_enabled", server.cluster() != nullptr ? 1 : 0);
  } else if (section == "keyspace") {
    KeyspaceSection(server, l);
  } else if (section == "rocksdb") {
    RocksDbSection(server, l);
  }
}

std::atomic<uint64_t> g_peak_memory{0};

}  // namespace

std::string BytesToHuman(uint64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"K", "M", "G", "T", "P", "E"};
  if (bytes < 1024) {
    return std::to_string(bytes) + "B";
  }
  double v = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < kUnits.size()) {
    v /= 1024.0;
    ++unit;
  }
  return Format("%.2f", v) + kUnits[unit];
}

ProcessMemory ReadProcessMemory() {
  ProcessMemory mem;
  const struct mallinfo2 mi = mallinfo2();
  mem.used = mi.uordblks + mi.hblkhd;
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0;
  uint64_t resident_pages = 0;
  if (statm >> size_pages >> resident_pages) {
    mem.rss = resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  }
  uint64_t peak = g_peak_memory.load();
  while (mem.used > peak && !g_peak_memory.compare_exchange_weak(peak, mem.used)) {
  }
  mem.peak = std::max(peak, mem.used);
  return mem;
}

void InfoCommand(CommandContext& ctx) {
  std::set<std::string> wanted;
  auto add_all = [&wanted](const auto& list) {
    for (auto s : list) {
      wanted.emplace(s);
    }
  };
  if (ctx.argv.size() == 1) {
    add_all(kDefaultSections);
  }
  for (size_t i = 1; i < ctx.argv.size(); ++i) {
    const std::string arg = ToLower(ctx.argv[i]);
    if (arg == "default") {
      add_all(kDefaultSections);
    } else if (arg == "all" || arg == "everything") {
      add_all(kSectionOrder);
    } else {
      wanted.insert(arg);
    }
  }
  std::string text;
  for (auto section : kSectionOrder) {
    if (wanted.count(std::string(section))) {
      WriteSection(ctx.server, section, &text);
    }
  }
  ctx.out.Verbatim(text);
}

}  // namespace cuckood::server

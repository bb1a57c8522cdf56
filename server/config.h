// Server options: one table of rows (name, default, description, run-time changeable), read from
// conf/cuckood.conf-style files (`name value` lines) and CLI11 flags of the same names; flags win.
// CONFIG GET/SET use the same rows.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cuckood::server {

struct Config {
  std::string bind = "127.0.0.1";
  int port = 6379;
  std::string dir = "./data";
  int workers = 0;  // 0 = number of cores
  std::string requirepass;
  bool protected_mode = true;
  // DEBUG: yes, no, local (loopback clients only). Redis 7 defaults to no; cuckood to local, so
  // DEBUG RELOAD / SLEEP work for tests and tools on the same host and nowhere else.
  std::string enable_debug_command = "local";
  bool group_commit = true;         // pipelined filter writes share RocksDB writes
  bool combine_commands = true;     // consecutive pipelined calls on one key run as one
  bool key_affinity = true;         // writers contending for a key move to its io thread
  bool adaptive_io_threads = true;  // fewer io threads in use while the cores are contended
  bool malloc_huge_pages = true;    // glibc's malloc: one arena in transparent huge pages
  std::string appendfsync = "everysec";
  int maxclients = 10000;
  int timeout = 0;  // seconds of idleness before a client is closed; 0 = never
  int tcp_keepalive = 300;
  std::string loglevel = "notice";
  std::string logfile;  // empty = stdout
  int databases = 16;
  uint64_t proto_max_bulk_len = 512ULL << 20;
  uint64_t client_query_buffer_limit = 1ULL << 30;
  uint64_t client_output_buffer_limit = 0;  // hard limit per normal client in bytes; 0 = none
  // The pubsub class of client-output-buffer-limit (Redis's default "pubsub 32mb 8mb 60"): a
  // subscribed client is closed past the hard limit, or past the soft one for soft seconds.
  uint64_t pubsub_output_hard_limit = 32ULL << 20;
  uint64_t pubsub_output_soft_limit = 8ULL << 20;
  int64_t pubsub_output_soft_seconds = 60;
  uint64_t block_cache_size = 256ULL << 20;
  uint64_t cache_size = 256ULL << 20;         // in-memory cache of decoded metadata and pages
  uint64_t chain_index_memory = 64ULL << 20;  // indexes of long chains of sub-filters; 0 = none
  uint64_t write_buffer_size = 64ULL << 20;
  std::string memtable = "pages";
  int64_t slowlog_log_slower_than = 10000;  // microseconds; <0 disables, 0 logs everything
  uint64_t slowlog_max_len = 128;
  int64_t latency_monitor_threshold = 0;
  // "name newname" joined by one space; an empty newname ("name ") disables the command.
  std::vector<std::string> rename_commands;
  std::string pidfile;
  // Cuckoo filter defaults (RedisBloom's module options) and storage of filters.
  uint64_t cf_initial_size = 1024;
  uint64_t cf_bucket_size = 2;
  uint64_t cf_max_iterations = 20;
  uint64_t cf_expansion_factor = 1;
  uint64_t cf_max_expansions = 32;
  std::string cf_sizing = "redisbloom";
  uint64_t cf_page_size = 2048;
  uint64_t cf_max_filter_bytes = 1ULL << 36;
  // TLS (OpenSSL through Asio): a second listener on tls_port (0 = none) on the same addresses.
  int tls_port = 0;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_cert_file;
  std::string tls_auth_clients = "yes";  // yes: clients need a certificate the CA signed
  // Cluster mode (Kvrocks' model: a controller pushes the topology with CLUSTERX).
  bool cluster_enabled = false;
  std::string cluster_config_file = "nodes.conf";  // in dir: node id, version, topology
  int64_t cluster_import_timeout = 30;  // seconds an import waits for its source's next batch
  // Replication (replication/): "host port" of the primary, empty = this node is a primary.
  std::string replicaof;
  std::string masterauth;
  std::string masteruser;
  bool replica_read_only = true;
  std::string replica_announce_ip;
  int replica_announce_port = 0;  // 0 = the port option
  int replica_priority = 100;
  bool replica_announced = true;
  uint64_t repl_backlog_size = 1ULL << 30;  // WAL bytes kept for replicas that fall behind
  int64_t repl_backlog_ttl = 3600;          // seconds the WAL is kept for them
  int64_t repl_timeout = 60;                // seconds without traffic before a link is dropped
  uint64_t repl_sync_rate = 0;              // full-sync bytes a second; 0 = no limit
};

// What the running server does when an option takes a new value (at start, and on CONFIG SET
// of a run-time option): server/live_config.h carries it out.
enum class OptionEffect {
  kNone,         // read from the config where it is used (e.g. maxclients, requirepass)
  kHotSettings,  // one of the settings read on the command path without the config's mutex
  kFsync,        // the WAL sync policy of the engine
  kReplication,  // the replication senders' options
  kLogLevel,     // the logger's level
};

// One option row. get/set operate on a Config; set returns an error text or nullopt.
struct OptionRow {
  std::string name;
  std::string description;
  bool mutable_at_runtime;
  std::function<std::string(const Config&)> get;
  std::function<std::optional<std::string>(Config&, const std::string&)> set;
  OptionEffect effect = OptionEffect::kNone;
};

const std::vector<OptionRow>& OptionTable();
const OptionRow* FindOption(const std::string& name);

// Reads a config file into cfg. Returns an error text (with file and line) or nullopt.
std::optional<std::string> LoadConfigFile(const std::string& path, Config* cfg);

// CONFIG REWRITE: writes the values of cfg into the config file at path. The file keeps its
// comments, blank lines, includes and order; the first line of each option set in it is
// replaced by the running value (later lines of the same option are dropped); options not in
// the file whose value differs from the default are appended. Written to a temporary file in the
// same directory, synced and renamed over path. Returns an error text (errno's) or nullopt.
std::optional<std::string> RewriteConfigFile(const std::string& path, const Config& cfg);

// Parses argv (CLI11): --config FILE first, then every option as --name value. Throws on bad
// input (start-up only); returns false when the program should exit with *exit_code (help,
// version).
bool ParseCommandLine(int argc, char** argv, Config* cfg, int* exit_code, bool* check_mode);
// As above; also stores the config file that was read ("" when none) in *config_file, if given.
// The file comes from --config or a positional argument (`cuckood /etc/cuckood.conf`).
// compact_mode (if given) is set by --compact.
bool ParseCommandLine(int argc, char** argv, Config* cfg, int* exit_code, bool* check_mode,
                      std::string* config_file, bool* compact_mode = nullptr);

// Parses sizes like "256mb", "1gb", "100" into bytes.
std::optional<uint64_t> ParseMemory(const std::string& text);

}  // namespace cuckood::server

// The server: io threads (Asio), the listener, connections, the command table and everything the
// command handlers share (storage, config, statistics, client registry, slowlog).
//
// Threading: `workers` threads each run one io_context. A connection lives on one of them and its
// commands run inline there, in order. Shared state here is either atomic or behind a mutex;
// storage locking is described in storage/locks.h.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/command.h"
#include "server/config.h"
#include "server/stats.h"
#include "storage/db.h"
#include "storage/engine.h"
#include "storage/write_group.h"

namespace asio::ssl {
class context;
}  // namespace asio::ssl

namespace cuckood::cluster {
class ClusterState;
}  // namespace cuckood::cluster

namespace cuckood::server {

class Connection;
class Replication;
class PubSub;
class PubSubSink;

// What a connection is, for CLIENT LIST / CLIENT KILL TYPE and the output buffer limit class.
// kPubSub is set by the Pub/Sub commands while the client has subscriptions; replication sets
// kReplica on the link of a replica it serves and kMaster on its own link to its primary.
enum class ClientKind : uint8_t { kNormal = 0, kPubSub = 1, kReplica = 2, kMaster = 3 };

// Per-connection state the command handlers see.
struct Client {
  uint64_t id = 0;
  std::string name;
  std::string lib_name;
  std::string lib_ver;
  std::string addr;   // ip:port of the peer
  std::string laddr;  // ip:port of our side
  uint16_t db = 0;
  int proto = 2;
  bool authenticated = false;
  bool close_after_reply = false;
  bool no_evict = false;
  bool no_touch = false;
  // MULTI state
  bool in_multi = false;
  bool multi_dirty = false;  // an error while queuing: EXEC answers EXECABORT
  std::vector<std::vector<std::string>> queued;
  // WATCH: (db + key as Server::WatchId encodes it, modification counter when watched)
  std::vector<std::pair<std::string, uint64_t>> watched;
  std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_interaction = std::chrono::steady_clock::now();
  std::string last_command = "NULL";
  size_t query_buffer = 0;
  size_t output_pending = 0;
  bool kill_requested = false;
  // Lock batching: while an io thread runs the commands its connections have received (a
  // pipeline, and the commands of other clients that arrived in the same round of the event
  // loop), the commands keep their key stripes instead of unlocking and relocking them for every
  // command, and their filter writes share one RocksDB write (group commit,
  // storage/write_group.h). A command on other keys joins when their stripes can be taken
  // without waiting (at most 256 stripes and 256 commands a batch). The batch belongs to the io
  // thread (Server::Execute); it ends before a command must wait for stripes, before anything
  // waits, and at the latest in a handler
  // posted behind the round (Server::ScheduleBatchEnd). Set by the connection around its
  // pipeline loop.
  bool lock_batching = false;
  // Group commit: this client's replies from group_start of *group_out on answer commands of
  // its io thread's open write group; they are not sent before that group is committed
  // (Connection::Flush waits), and each becomes the error if the commit fails.
  bool group_pending = false;
  std::string* group_out = nullptr;
  size_t group_start = 0;
  size_t group_commands = 0;
  std::weak_ptr<void> owner;          // the connection, kept alive while its replies wait
  std::function<void()> flush_later;  // posts a flush of the connection's replies
  // Cluster mode: READONLY (a replica may serve this client's reads) and ASKING (for the next
  // command only).
  bool cluster_readonly = false;
  bool cluster_asking = false;
  // Replication: what REPLCONF said, and (set by REPLSYNC) who takes the connection's socket
  // once the replies before it are written: the connection then ends without closing it.
  int repl_listening_port = 0;
  std::string repl_ip;
  bool tls = false;
  std::function<void(int fd)> take_socket;
  ClientKind kind = ClientKind::kNormal;
  // Pub/Sub (server/pubsub.h): this client's subscriptions and where its messages go.
  std::set<std::string> channels;
  std::set<std::string> patterns;
  std::weak_ptr<PubSubSink> pubsub_sink;
};

struct SlowlogEntry {
  uint64_t id;
  int64_t unix_time;
  int64_t micros;
  std::vector<std::string> argv;
  std::string addr;
  std::string name;
};

class SlotMigrator;

class Server {
 public:
  explicit Server(Config config);
  ~Server();

  // Opens storage and starts listening; throws std::runtime_error on start-up failure.
  void Start();
  // Runs until shutdown (blocks the calling thread).
  void Wait();
  // Begins a graceful stop from any thread (SIGTERM, SHUTDOWN).
  void RequestShutdown();

  // ---- used by connections and handlers --------------------------------------------------------
  const CommandTable& commands() const { return table_; }
  storage::Db& db() { return *db_; }
  storage::Engine& engine() { return *engine_; }
  storage::CfSettings cf_settings() const;
  // client-output-buffer-limit, readable on the hot path without copying the config.
  uint64_t client_output_buffer_limit() const {
    return client_output_buffer_limit_.load(std::memory_order_relaxed);
  }
  Stats& stats() { return stats_; }
  PubSub& pubsub() { return *pubsub_; }
  // client-output-buffer-limit of the pubsub class (hard, soft bytes; 0 = none; soft seconds).
  uint64_t pubsub_output_hard_limit() const { return pubsub_hard_.load(std::memory_order_relaxed); }
  uint64_t pubsub_output_soft_limit() const { return pubsub_soft_.load(std::memory_order_relaxed); }
  int64_t pubsub_output_soft_seconds() const {
    return pubsub_soft_seconds_.load(std::memory_order_relaxed);
  }

  // Runs one command for a client: lookup, arity, auth, MULTI queuing, locks, stats. Appends the
  // reply to out.
  void Dispatch(Client& client, const Argv& argv, resp::Writer& out);
  // The same with the command already looked up (spec may be nullptr: unknown command).
  void Dispatch(Client& client, const CommandSpec* spec, const Argv& argv, resp::Writer& out);
  // Threads for kBackground commands, so a long one never holds up an io thread.
  asio::thread_pool& background() { return *background_; }
  // Executes a command already validated (used by Dispatch and EXEC). hold_locks = the caller
  // already holds the stripes.
  void Execute(const CommandSpec& spec, Client& client, const Argv& argv, resp::Writer& out,
               bool locks_held);

  // Config access (CONFIG GET/SET); set applies run-time side effects.
  Config config() const;
  std::optional<std::string> SetConfig(const std::string& name, const std::string& value);
  // Changes the running config without side effects (REPLICAOF records its primary here, so
  // that CONFIG REWRITE writes it).
  void UpdateConfig(const std::function<void(Config&)>& change);

  // ---- replication (server/replication.h) -------------------------------------------------
  Replication& replication() { return *replication_; }
  // While loading (a replica installing a full sync), data commands answer -LOADING.
  void SetLoading(bool loading) { loading_.store(loading, std::memory_order_release); }
  bool loading() const { return loading_.load(std::memory_order_acquire); }
  // Closes the database, runs `between` (e.g. installs the checkpoint staged by a full sync), and
  // opens it again with empty caches, with every io thread held still meanwhile (call it from
  // another thread); gives up (nothing changed) when cancel becomes true before they are.
  storage::Status ReopenDatabase(const std::function<storage::Status()>& between,
                                 const std::atomic<bool>& cancel);
  // CLIENT PAUSE: until `until` (steady clock), clients' commands wait, all of them or (all =
  // false) those that write or may replicate. A later pause extends an earlier one and never
  // makes it less strict while both last. Unpause ends it at once.
  void Pause(std::chrono::steady_clock::time_point until, bool all);
  void Unpause() { pause_until_ns_.store(0, std::memory_order_release); }
  // How long this command must still wait (zero: run it now).
  std::chrono::steady_clock::duration PauseRemaining(const CommandSpec* spec,
                                                     const Client& client) const;

  // Kept by connections around commands they run on the background pool (ReplaceDatabase
  // waits for them).
  void BackgroundBegin() { background_running_.fetch_add(1, std::memory_order_acq_rel); }
  void BackgroundEnd() { background_running_.fetch_sub(1, std::memory_order_acq_rel); }

  // WATCH support: modification counters of the keys some client watches (only those).
  static std::string WatchId(uint16_t db, std::string_view key);
  // Registers a watch of the client on key; returns the key's current counter.
  uint64_t Watch(uint16_t db, std::string_view key);
  uint64_t WatchVersion(const std::string& id);
  // Drops every watch of the client (EXEC, DISCARD, UNWATCH, RESET, disconnect).
  void UnwatchAll(Client& client);
  // The lock batch of the calling io thread (see Client::lock_batching). EndGroup commits its
  // write group and lets the replies that waited for it go; EndBatch also releases its stripes;
  // ScheduleBatchEnd posts EndBatch behind the handlers queued on this io thread, once.
  void EndGroup();
  void EndBatch();
  void ScheduleBatchEnd(const asio::any_io_executor& executor);
  // A write touched these keys: clients watching them will see EXEC fail.
  void TouchKeys(uint16_t db, const std::vector<std::string_view>& keys);
  // FLUSHDB (db) / FLUSHALL (nullopt): every watched key of the database(s) is touched.
  void TouchAll(std::optional<uint16_t> db = std::nullopt);
  // The keys WATCHed in database db (SWAPDB).
  std::vector<std::string> WatchedKeys(uint16_t db);

  // Client registry (CLIENT LIST / KILL / INFO clients).
  void RegisterConnection(const std::shared_ptr<Connection>& conn);
  void UnregisterConnection(uint64_t id);
  std::vector<std::shared_ptr<Connection>> Connections();
  size_t connected_clients() const { return connected_.load(); }
  uint64_t NextClientId() { return ++client_ids_; }

  // Slowlog
  void SlowlogAdd(const Client& client, const Argv& argv, int64_t micros);
  std::vector<SlowlogEntry> SlowlogGet(int64_t count);
  size_t SlowlogLen();
  void SlowlogReset();

  std::chrono::steady_clock::time_point start_time() const { return start_time_; }
  int64_t start_unix() const { return start_unix_; }
  const std::string& run_id() const { return run_id_; }
  int port() const { return bound_port_; }
  int tls_port() const { return bound_tls_port_; }
  int io_threads() const { return static_cast<int>(contexts_.size()); }
  bool shutting_down() const { return shutting_down_.load(); }
  std::string executable() const { return executable_; }
  void set_executable(std::string path) { executable_ = std::move(path); }
  std::string config_file() const { return config_file_; }
  void set_config_file(std::string path) { config_file_ = std::move(path); }
  // Cluster mode (server/cluster_mode.h); null when cluster-enabled is no.
  cluster::ClusterState* cluster() const { return cluster_.get(); }
  // Slot migration (server/slot_migration.h); null when cluster-enabled is no.
  SlotMigrator* slot_migrator() const { return slot_migrator_.get(); }

 private:
  void Accept(size_t acceptor);
  void OnAccepted(size_t acceptor, asio::ip::tcp::socket socket);
  void StopAll();
  void Tick();

  mutable std::mutex config_mu_;
  Config config_;
  // Hot-path copies of settings, readable without the mutex.
  std::atomic<uint64_t> cf_initial_size_, cf_bucket_size_, cf_max_iterations_, cf_expansion_factor_,
      cf_max_expansions_, cf_page_size_, cf_max_filter_bytes_;
  std::atomic<int> cf_sizing_;
  std::atomic<int64_t> slowlog_slower_than_;
  std::atomic<uint64_t> slowlog_max_len_;
  std::atomic<uint64_t> client_output_buffer_limit_{0};
  std::atomic<uint64_t> pubsub_hard_{0}, pubsub_soft_{0};
  std::atomic<int64_t> pubsub_soft_seconds_{0};
  std::unique_ptr<PubSub> pubsub_;
  std::atomic<bool> group_commit_{true};
  std::unordered_map<const CommandSpec*, CommandStats*> command_stats_;  // filled by Start()

  CommandTable table_;
  storage::EngineOptions engine_options_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<storage::Db> db_;
  Stats stats_;
  std::unique_ptr<Replication> replication_;
  std::atomic<bool> loading_{false};
  std::atomic<int64_t> pause_until_ns_{0};  // steady clock; 0 = not paused
  std::atomic<bool> pause_all_{false};
  std::atomic<int> background_running_{0};

  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
  std::vector<bool> acceptor_tls_;  // per acceptor: its clients speak TLS
  std::unique_ptr<asio::ssl::context> tls_ctx_;
  std::atomic<size_t> next_context_{0};
  std::unique_ptr<asio::signal_set> signals_;
  std::unique_ptr<asio::steady_timer> tick_timer_;
  std::unique_ptr<asio::thread_pool> background_;

  std::mutex conns_mu_;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> conns_;
  std::atomic<size_t> connected_{0};
  std::atomic<uint64_t> client_ids_{0};

  struct WatchEntry {
    uint64_t version = 0;
    uint32_t watchers = 0;
  };
  std::mutex watch_mu_;
  std::unordered_map<std::string, WatchEntry> watches_;
  std::atomic<size_t> watch_count_{0};
  uint64_t watch_clock_ = 0;

  std::mutex slowlog_mu_;
  std::deque<SlowlogEntry> slowlog_;
  uint64_t slowlog_next_id_ = 0;

  std::mutex shutdown_mu_;
  std::condition_variable shutdown_cv_;
  std::atomic<bool> shutting_down_{false};
  bool stopped_ = false;
  std::chrono::steady_clock::time_point start_time_ = std::chrono::steady_clock::now();
  int64_t start_unix_ = 0;
  std::string run_id_;
  int bound_port_ = 0;
  int bound_tls_port_ = 0;
  std::string executable_;
  std::string config_file_;
  std::unique_ptr<cluster::ClusterState> cluster_;
  std::unique_ptr<SlotMigrator> slot_migrator_;
};

}  // namespace cuckood::server

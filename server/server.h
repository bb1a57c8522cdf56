// The server: the io threads (Asio), the listeners and the lifetime of everything the command
// handlers share, each in a file of its own: the dispatcher (server/dispatcher.h), storage, the
// config, statistics, WATCH (server/watch.h), the slow log (server/slowlog.h), the client registry
// (server/clients.h), Pub/Sub, replication and cluster mode.
//
// Threading: `workers` threads each run one io_context. A connection lives on one of them at a
// time (key-affinity may move it, between two reads: server/connection.h) and its commands run
// inline there, in order. Shared state here is either atomic or behind a mutex;
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

#include "server/client.h"
#include "server/clients.h"
#include "server/command.h"
#include "server/config.h"
#include "server/dispatcher.h"
#include "server/io_balance.h"
#include "server/live_config.h"
#include "server/lock_batch.h"
#include "server/slowlog.h"
#include "server/stats.h"
#include "server/watch.h"
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

class SlotMigrator;

// What the process is (INFO server, HELLO, CLUSTER MYID's neighbours): fixed once Start() has
// bound the listeners; executable and config_file are set by main before Start().
struct ProcessInfo {
  std::chrono::steady_clock::time_point start_time = std::chrono::steady_clock::now();
  int64_t start_unix = 0;
  std::string run_id;
  int port = 0;      // bound (also when the config said 0)
  int tls_port = 0;  // bound TLS port, 0 = none
  int io_threads = 0;
  std::string executable;
  std::string config_file;
};

// The pool that runs kBackground commands (a connection waits for the reply meanwhile).
class BackgroundPool {
 public:
  asio::thread_pool& pool() { return *pool_; }
  // Kept around each command run on the pool (ReopenDatabase waits for them).
  void Begin() { running_.fetch_add(1, std::memory_order_acq_rel); }
  void End() { running_.fetch_sub(1, std::memory_order_acq_rel); }
  int running() const { return running_.load(std::memory_order_acquire); }
  void Open(size_t threads) { pool_ = std::make_unique<asio::thread_pool>(threads); }
  // Lets the commands in flight finish.
  void Join() {
    if (pool_) {
      pool_->join();
    }
  }

 private:
  std::unique_ptr<asio::thread_pool> pool_;
  std::atomic<int> running_{0};
};

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
  bool shutting_down() const { return shutting_down_.load(); }
  // Closes the database, runs `between` (e.g. installs the checkpoint staged by a full sync), and
  // opens it again with empty caches, with every io thread held still meanwhile (call it from
  // another thread); gives up (nothing changed) when cancel becomes true before they are.
  storage::Status ReopenDatabase(const std::function<storage::Status()>& between,
                                 const std::atomic<bool>& cancel);

  // ---- the parts, for connections and handlers --------------------------------------------------
  const CommandTable& commands() const { return table_; }
  Dispatcher& dispatcher() { return dispatcher_; }
  storage::Db& db() { return *db_; }
  storage::Engine& engine() { return *engine_; }
  Stats& stats() { return stats_; }
  WatchRegistry& watches() { return watches_; }
  Slowlog& slowlog() { return slowlog_; }
  ClientRegistry& clients() { return clients_; }
  PubSub& pubsub() { return *pubsub_; }
  Replication& replication() { return *replication_; }
  // Threads for kBackground commands, so a long one never holds up an io thread.
  BackgroundPool& background() { return background_; }
  // Cluster mode (server/cluster_mode.h); null when cluster-enabled is no.
  cluster::ClusterState* cluster() const { return cluster_.get(); }
  // Slot migration (server/slot_migration.h); null when cluster-enabled is no.
  SlotMigrator* slot_migrator() const { return slot_migrator_.get(); }
  ProcessInfo& process() { return process_; }
  // The io threads (one io_context and one lock batch each, same index), for connections that
  // move between them (key-affinity, server/connection.h).
  size_t io_threads() const { return contexts_.size(); }
  asio::io_context& io_context(size_t i) { return *contexts_[i]; }
  LockBatch& lock_batch(size_t i) { return *batches_[i]; }
  // How many of the io threads serve connections now (adaptive-io-threads, server/io_balance.h).
  // (connections only: it exists once Start() made the io threads)
  IoBalance& io_balance() { return *io_balance_; }
  size_t io_threads_in_use() const { return io_balance_ ? io_balance_->active() : 0; }
  uint64_t io_thread_changes() const { return io_balance_ ? io_balance_->changes() : 0; }

  // The running configuration (server/live_config.h): CONFIG GET/SET and the hot settings.
  LiveConfig& live_config() { return live_; }

 private:
  void Accept(size_t acceptor);
  void OnAccepted(size_t acceptor, asio::ip::tcp::socket socket, size_t origin);
  void StopAll();
  void Tick();

  LiveConfig live_;
  std::unique_ptr<PubSub> pubsub_;

  CommandTable table_;
  storage::EngineOptions engine_options_;
  std::unique_ptr<storage::Engine> engine_;
  std::unique_ptr<storage::Db> db_;
  Stats stats_;
  Dispatcher dispatcher_{*this};
  WatchRegistry watches_;
  Slowlog slowlog_;
  ClientRegistry clients_;
  std::unique_ptr<Replication> replication_;
  BackgroundPool background_;

  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<std::unique_ptr<LockBatch>> batches_;  // one per io context, same index
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::vector<std::thread> threads_;
  std::unique_ptr<IoBalance> io_balance_;
  std::vector<std::unique_ptr<asio::ip::tcp::acceptor>> acceptors_;
  std::vector<bool> acceptor_tls_;  // per acceptor: its clients speak TLS
  std::unique_ptr<asio::ssl::context> tls_ctx_;
  std::atomic<size_t> next_context_{0};
  std::unique_ptr<asio::signal_set> signals_;
  std::unique_ptr<asio::steady_timer> tick_timer_;

  std::mutex shutdown_mu_;
  std::condition_variable shutdown_cv_;
  std::atomic<bool> shutting_down_{false};
  bool stopped_ = false;
  ProcessInfo process_;
  std::unique_ptr<cluster::ClusterState> cluster_;
  std::unique_ptr<SlotMigrator> slot_migrator_;
};

}  // namespace cuckood::server

// The replica side of replication: one thread that keeps a link to the primary, installs a full
// sync when it gets one, and applies the primary's write batches in order.
//
// The link is re-established (every second) for as long as the node is a replica. Applied
// batches go through Host::ApplyBatch, which keeps the in-memory cache right
// (storage::Db::ApplyReplicated). A batch whose sequence is not the one that follows this
// node's newest is never applied: the link is dropped and the next one asks for a full sync.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "replication/link.h"

namespace cuckood::replication {

class ReplicaLink {
 public:
  // What the server provides to the link.
  class Host {
   public:
    virtual ~Host() = default;
    virtual uint64_t LatestSequence() = 0;
    virtual Status ApplyBatch(std::string batch) = 0;
    // Replaces the database with the checkpoint staged in dir/.fullsync (no command runs
    // meanwhile); gives up, leaving the old database, when cancel becomes true.
    virtual Status InstallFullSync(const std::atomic<bool>& cancel) = 0;
    // While true, data commands answer -LOADING.
    virtual void SetLoading(bool loading) = 0;
    // The replication id of the history the node now holds (persisted by the host).
    virtual void AdoptReplicationId(const std::string& replid) = 0;
    virtual std::string ReplicationId() = 0;
  };
  struct Options {
    std::string host;
    int port = 0;
    std::string masterauth;
    std::string masteruser;
    std::string announce_ip;
    int listening_port = 0;
    std::string dir;
    std::chrono::milliseconds timeout{60000};
  };

  ReplicaLink(Host* host, Options options);
  // Stops the thread (see Stop).
  ~ReplicaLink();
  ReplicaLink(const ReplicaLink&) = delete;
  ReplicaLink& operator=(const ReplicaLink&) = delete;

  void Start();
  // Ends the link and joins its thread. A full sync under way is abandoned (the database stays
  // as it was). Never call it from a thread the install waits for (an io thread) without
  // RequestStop first: use RequestStop, then destroy the object elsewhere or later.
  void RequestStop();
  void Stop();

  const Options& options() const { return options_; }
  enum class State { kConnect, kConnecting, kSync, kConnected };
  State state() const { return state_.load(); }
  bool link_up() const { return state_.load() == State::kConnected; }
  bool sync_in_progress() const { return state_.load() == State::kSync; }
  // Seconds since the last bytes from the primary (-1: none yet).
  int64_t last_io_seconds_ago() const;
  // Seconds since the link went down (since the link was created when never up).
  int64_t link_down_since_seconds() const;
  // The primary's newest sequence as its last heartbeat said.
  uint64_t primary_sequence() const { return primary_seq_.load(); }
  uint64_t sync_bytes() const { return sync_bytes_.load(); }
  std::string last_error() const;

 private:
  void Run();
  // One connection: handshake, full sync if needed, then the stream, until it fails or stops.
  Status Session();
  Status Handshake(Link& link, std::string* reply);
  void SetError(const std::string& e);

  Host* host_;
  Options options_;
  Link link_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex wait_mu_;
  std::condition_variable wait_cv_;
  std::atomic<State> state_{State::kConnect};
  std::atomic<int64_t> last_io_ms_{-1};
  std::atomic<int64_t> down_since_ms_;
  std::atomic<uint64_t> primary_seq_{0};
  std::atomic<uint64_t> sync_bytes_{0};
  bool force_full_ = false;
  mutable std::mutex error_mu_;
  std::string last_error_;
};

}  // namespace cuckood::replication

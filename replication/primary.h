// The primary side of replication: one sender thread per connected replica.
//
// A replica connects like a client and, after AUTH and REPLCONF, sends
// `REPLSYNC <protocol version> <replid|?> <seq>`: the history it holds and the newest sequence
// it applied. The server hands the connection's socket to Primary::Serve, whose sender answers
// +CONTINUE when this node's WAL continues that history from seq + 1 (same replid, or the replid
// this node continued from, up to the point it did), and +FULLSYNC with a checkpoint otherwise
// (replication/fullsync.h); then it streams every later write batch as it is in the WAL
// (DB::GetUpdatesSince), with heartbeats, and reads the replica's ACKs (what WAIT counts).
//
// Senders never block a client: each has its own thread and socket, reads the WAL from disk, and
// drops a replica that stops reading for longer than the replication timeout. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replication/link.h"
#include "replication/state.h"
#include "storage/engine.h"

namespace cuckood::replication {

struct SyncRequest {
  int version = 0;
  std::string replid;
  uint64_t seq = 0;
  std::string ip;  // where the replica says it is reachable (its address when not announced)
  int port = 0;    // REPLCONF listening-port
};

struct ReplicaInfo {
  std::string ip;
  int port = 0;
  std::string state;  // "wait_bgsave" / "send_bulk" (full sync) / "online"
  uint64_t ack_seq = 0;
  int64_t lag_seconds = 0;  // since its last ACK
};

class Primary {
 public:
  struct Options {
    std::string dir;               // the database folder (checkpoints are made in it)
    uint64_t sync_rate_bytes = 0;  // full-sync bytes a second; 0 = no limit
    std::chrono::milliseconds timeout{60000};
  };
  // engine: the database now (it may change between senders, never under one: StopAll first).
  // state: this node's replication ids, read when a replica asks.
  Primary(std::function<storage::Engine&()> engine, std::function<NodeState()> state,
          Options options);
  ~Primary();

  // Takes over a connected socket whose client sent REPLSYNC.
  void Serve(int fd, SyncRequest request);
  // Disconnects every replica (they reconnect and ask again); returns once their senders ended.
  void StopAll();
  // The same without waiting for the senders to end (from an io thread).
  void KillAllAsync();
  void SetOptions(Options options);

  std::vector<ReplicaInfo> Replicas();
  // Replicas whose ACK reached seq.
  int CountAcked(uint64_t seq);
  // Waits until at least n replicas acknowledged seq or the timeout passes (0 = no limit);
  // returns how many did.
  int WaitForAcks(int n, uint64_t seq, std::chrono::milliseconds timeout);

 private:
  struct Sender {
    Link link;
    SyncRequest request;
    std::thread thread;
    std::atomic<bool> stop{false};
    std::atomic<bool> done{false};
    std::atomic<uint64_t> ack_seq{0};
    std::atomic<int64_t> last_ack_ms{0};
    std::atomic<int> state{0};  // 0 wait_bgsave, 1 send_bulk, 2 online
  };
  void Run(Sender* s);
  // Streams batches from s->request.seq + 1 until stopped or the link fails.
  Status Stream(Sender* s, uint64_t next);
  // Reads the ACK lines that have arrived (does not block for new ones).
  Status ReadAcks(Sender* s);
  void Ack(Sender* s, uint64_t seq);
  void Reap();  // joins senders that ended

  std::function<storage::Engine&()> engine_;
  std::function<NodeState()> state_;
  std::mutex mu_;
  Options options_;
  std::list<std::unique_ptr<Sender>> senders_;
  std::condition_variable ack_cv_;
};

}  // namespace cuckood::replication

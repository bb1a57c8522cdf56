// A client as the command handlers see it: one per connection (and one per in-process caller).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cuckood::server {

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
  // WATCH: (db + key as WatchRegistry::Id encodes it, modification counter when watched)
  std::vector<std::pair<std::string, uint64_t>> watched;
  std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_interaction = std::chrono::steady_clock::now();
  std::string last_command = "NULL";
  size_t query_buffer = 0;
  size_t output_pending = 0;
  bool kill_requested = false;
  // Lock batching: this client's commands may join the lock batch of its io thread (see
  // server/lock_batch.h) that the connection hands to the dispatcher. Set by the connection
  // around its pipeline loop.
  bool lock_batching = false;
  // Set by the connection around a command it can set aside: a write whose key another io
  // thread's lock batch holds then does not run (nothing is answered or counted) and parked is
  // set; the connection runs it again later (Connection::Park).
  bool may_park = false;
  bool parked = false;
  // Set by the dispatcher when a write found its key's stripe (this one) held by another thread;
  // the connection reads and clears it (key-affinity, Connection::NoteContention). -1: none.
  int64_t contended_stripe = -1;
  // Set by the dispatcher to the (first) stripe of a write that may join a lock batch; read and
  // cleared by the connection (key-affinity: whether it still writes the key it moved for).
  int64_t write_stripe = -1;
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

}  // namespace cuckood::server

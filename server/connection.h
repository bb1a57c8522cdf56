// One client connection: reads into the RESP parser, runs each whole command through the
// dispatcher inline on its io thread (pipelined commands keep their order), and writes the
// replies of a batch of commands with one socket write. Backpressure: while more than the
// output threshold is pending, the connection stops reading.
#pragma once

#include <asio.hpp>
#include <asio/ssl.hpp>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "resp/parser.h"
#include "server/pubsub.h"
#include "server/server.h"

namespace cuckood::server {

// CLIENT LIST's flags= field for a client of this kind: S (a replica's link), M (the link to our
// primary), P (subscribed), x (in MULTI), N when none applies.
std::string ClientFlagsText(ClientKind kind, bool in_multi);

class Connection : public std::enable_shared_from_this<Connection>, public PubSubSink {
 public:
  // tls: the server's TLS context for a client of the TLS port, nullptr for plain TCP.
  // home: the io thread the socket belongs to (Server::io_context).
  // home: the io thread the socket belongs to; origin: the io thread it was dealt to when
  // accepted (home is its place among the threads in use, IoBalance::Place).
  Connection(Server& server, asio::ip::tcp::socket socket, uint64_t id, size_t home, size_t origin,
             asio::ssl::context* tls = nullptr);
  ~Connection();

  void Start();
  // Thread-safe: asks the connection to close (after flushing what is pending).
  void Kill();
  // Thread-safe: graceful stop for shutdown (stop reading, flush, close).
  void Shutdown();

  uint64_t id() const { return id_; }
  // A one-line description for CLIENT LIST / CLIENT INFO (thread-safe snapshot).
  std::string Describe() const;
  // Snapshot of some client fields for CLIENT KILL filters.
  std::string addr() const;
  std::string laddr() const;
  std::string name() const;
  size_t output_pending() const { return pending_out_.load(); }
  size_t query_buffer() const { return query_buf_.load(); }
  // The client's kind as of its last batch of commands (thread-safe snapshot).
  ClientKind kind() const;
  // Thread-safe: queues a published message for this client on its io thread.
  void Deliver(std::shared_ptr<const PubSubMessage> msg) override;

 private:
  void Begin();  // after the TLS handshake (if any): the idle timer and the first read
  void DoRead();
  // Pending output above which the connection stops reading and executing.
  size_t HighWater() const;
  void OnRead(const asio::error_code& ec, size_t n);
  void ProcessInput();
  // Runs a kBackground command on the server's background pool; the connection executes
  // nothing else (its pipeline waits) until the reply is back on the io thread.
  void RunInBackground(const CommandSpec* spec, const Argv& argv);
  // CLIENT PAUSE: keeps the command, stops processing input, and runs it when the pause ends.
  void WaitForUnpause(const CommandSpec* spec, const Argv& argv);
  // Sets aside a command whose key another io thread's lock batch holds (Client::parked), with
  // the command parsed after it when there is one, and runs them again in a handler posted
  // behind this round's other work. parks: how often the command was set aside before.
  void Park(const Argv& argv, int parks, Argv* next);
  void ResumeAfterPause();
  void Flush();
  // Appends a published message to the output (on the io thread) and sends it.
  void OnMessage(const PubSubMessage& msg);
  // client-output-buffer-limit of the client's class: true when the pending output is past it
  // (the connection is then closed, as Redis closes such a client).
  bool OverOutputLimit();
  void OnWrite(const asio::error_code& ec, size_t n);
  void Close();
  // Ends the connection and hands its socket to client_.take_socket (REPLSYNC).
  void Detach();
  void ArmIdleTimer();
  void SyncSnapshot();

  // ---- key-affinity: moving to another io thread ---------------------------------------------
  // A connection lives on one io thread (home_) and moves, between two reads, to the io thread
  // a contended key belongs to (its stripe modulo the io threads), when its writes found that
  // key's stripe held by another thread kContentionsToMove times in a row; and back to the thread
  // it was accepted on (origin_) once kQuietToReturn passed without contention and without a
  // write to that key (its writers, gathered, no longer contend). Only a plain
  // connection with nothing in flight moves (CanMove): its socket's descriptor is released from
  // the old thread's reactor and adopted by the new one (Land), with the bytes already read.
  // Whatever is posted to the connection from elsewhere goes through RunAtHome, which sends it
  // on to the connection's current thread. With adaptive-io-threads, "the thread it was
  // accepted on" is that thread's place among the io threads in use (IoBalance::Place, which
  // is origin_ itself while all are in use): a connection on a thread no longer in use, or
  // away from its place for no key, moves there at its next read; key-affinity chooses among
  // the threads in use.
  static constexpr int kContentionsToMove = 3;
  static constexpr auto kMinStay = std::chrono::milliseconds(50);
  static constexpr auto kQuietToReturn = std::chrono::seconds(5);
  // Reads client_.contended_stripe after a command ran or was set aside (and clears it); again:
  // the command was set aside before (each command counts once).
  void NoteContention(bool again);
  bool CanMove() const;
  // On the current home thread: hands the connection to io thread `to` (false: it stays), for
  // the key of that stripe (key-affinity) or, with -1, to its place.
  bool MoveTo(int to, int64_t for_stripe);
  // The io thread this connection belongs on when no key keeps it elsewhere.
  int Place() const;
  void Land(int fd, asio::ip::tcp protocol);
  // Runs fn on the connection's io thread (posted; sent on while the connection moves).
  void RunAtHome(std::function<void()> fn);

  Server& server_;
  LockBatch* batch_;                 // of this connection's io thread
  std::atomic<int> home_;            // the io thread the connection lives on
  std::atomic<bool> moving_{false};  // between MoveTo and Land
  std::atomic<uint32_t> moves_{0};   // (timers armed before a move do nothing after it)
  int origin_;                       // the io thread it was dealt to when accepted
  int fd_ = -1;                      // the socket's descriptor (kept when it moves: CLIENT LIST)
  int move_to_ = -1;                 // a move decided, done at the next read
  int64_t move_for_ = -1;            // the stripe of that move (-1: to its place)
  int64_t streak_stripe_ = -1;       // the stripe of the last contention, and how many in a row
  int streak_ = 0;
  int64_t affinity_stripe_ = -1;  // the stripe it moved for (-1 at origin_)
  std::chrono::steady_clock::time_point last_affine_write_{};  // (when read)
  std::chrono::steady_clock::time_point moved_at_{};
  std::chrono::steady_clock::time_point last_contention_{};
  asio::ip::tcp::socket socket_;
  // TLS over socket_ (clients of tls-port); reads and writes go through it when set.
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;
  asio::steady_timer idle_timer_;
  asio::steady_timer pause_timer_;
  std::vector<std::string> paused_argv_;  // the command waiting for CLIENT UNPAUSE
  // Commands set aside (Park), in order: they run before anything else the connection
  // received. A command is set aside at most kMaxParks times, then waits for its stripes.
  static constexpr int kMaxParks = 2;
  struct Parked {
    std::vector<std::string> args;
    int parks = 0;
  };
  std::deque<Parked> parked_;
  std::vector<std::string> resumed_;  // the set-aside command running now (argv points here)
  uint64_t id_;
  resp::Parser parser_;
  // Consecutive calls of one command on one key taken from the pipeline to run as one
  // (Dispatcher::DispatchCombined; kept for their buffers).
  std::vector<Argv> combined_;
  Argv ahead_;  // the command parsed after a combinable one (kept for its buffer)
  resp::ParserLimits limits_;
  Client client_;
  std::string out_;      // replies being built
  std::string writing_;  // replies on the wire
  bool reading_ = false;
  bool write_in_flight_ = false;
  bool closing_ = false;  // no more reads; close once output is flushed
  bool closed_ = false;
  bool busy_ = false;          // a background command of this connection is running
  bool park_pending_ = false;  // commands were set aside (Park): the pipeline waits for them
  std::atomic<size_t> pending_out_{0};
  std::atomic<size_t> query_buf_{0};
  mutable std::mutex snapshot_mu_;  // guards the copies below for other threads
  std::string snap_name_;
  std::string snap_cmd_;
  uint16_t snap_db_ = 0;
  int snap_proto_ = 2;
  bool snap_multi_ = false;
  size_t snap_queued_ = 0;  // commands queued in MULTI
  ClientKind snap_kind_ = ClientKind::kNormal;
  size_t snap_sub_ = 0;
  size_t snap_psub_ = 0;
  // Since when the pending output has been above the pubsub class's soft limit.
  std::optional<std::chrono::steady_clock::time_point> soft_limit_since_;
  std::chrono::steady_clock::time_point snap_last_;
  std::string lib_name_;
  std::string lib_ver_;
};

}  // namespace cuckood::server

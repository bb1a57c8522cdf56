// The dispatcher: the one path from a parsed command to its handler.
//
//   Dispatch: look up the row, check arity, AUTH, routing (cluster mode: run here or redirect),
//             LOADING / READONLY / subscribed mode, and queue inside MULTI;
//   Execute:  build the command's scope (its keys, their stripes, the read mode and the write
//             group it commits into), run the handler with it, then WATCH, statistics and the
//             slow log.
//
// Lock batching and group commit (server/lock_batch.h) join here: a connection passes the lock
// batch of its io thread, and the commands it runs there keep their stripes and share one
// RocksDB write for as long as the batch lasts. Nothing is handed over in thread-locals: what a
// handler's storage calls need travels in CommandContext::scope.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "resp/writer.h"
#include "server/command.h"
#include "storage/locks.h"
#include "storage/scope.h"

namespace cuckood::server {

class Server;
class LockBatch;
struct Client;
struct CommandStats;

// What one command runs under, built by Dispatcher::Execute once its stripes are held.
// keys and stripes are vectors the thread kept from earlier scopes (cleared, with their
// capacity), given back when the scope ends: a command's scope allocates nothing once the
// thread has run a few (scopes nest: EXEC's holds the queued commands' ones).
struct CommandScope {
  CommandScope();
  ~CommandScope();
  CommandScope(const CommandScope&) = delete;
  CommandScope& operator=(const CommandScope&) = delete;

  std::vector<std::string_view> keys;  // from the row's key spec (CommandKeys)
  std::vector<size_t> stripes;         // of keys (and of a key in another database), sorted
  bool exclusive = false;              // stripes held exclusively (writes) or shared (reads)
  storage::Scope storage;              // what the handler's storage calls receive
};

class Dispatcher {
 public:
  explicit Dispatcher(Server& server);

  // Runs one command for a client and appends its reply to out. spec: the command's row, or
  // nullptr (unknown command). batch: the lock batch of the io thread the caller runs on, which
  // the command may join when client.lock_batching is set; nullptr off the io threads (the
  // background pool, in-process callers).
  void Dispatch(Client& client, const CommandSpec* spec, const Argv& argv, resp::Writer& out,
                LockBatch* batch = nullptr);
  void Dispatch(Client& client, const Argv& argv, resp::Writer& out, LockBatch* batch = nullptr);
  // Dispatch of consecutive calls of spec by the client that all name the same key with the same
  // number of arguments (a connection's pipeline, server: combine-commands): when spec has a
  // combined handler and every check Dispatch makes passes, they run as one command (one lock,
  // one write group join, one handler call); otherwise one by one. Either way each call gets its
  // reply and is counted in the statistics (INFO commandstats, latency, slow log) as a call of
  // its own; the combined run's time is shared equally among its calls.
  void DispatchCombined(Client& client, const CommandSpec& spec, std::span<const Argv> calls,
                        resp::Writer& out, LockBatch* batch = nullptr);
  // Dispatch of consecutive calls of spec by the client with the same number of arguments that
  // name different keys (a connection's pipeline): when spec has an across_keys handler (reads)
  // and every check Dispatch makes passes, they run as one (the stripes of all their keys held
  // together, one handler call); otherwise one by one. Replies and statistics as
  // DispatchCombined's.
  void DispatchAcrossKeys(Client& client, const CommandSpec& spec, std::span<const Argv> calls,
                          resp::Writer& out, LockBatch* batch);
  // Runs a command already checked by Dispatch (EXEC runs its queued commands here with
  // locks_held: it holds their stripes already).
  void Execute(const CommandSpec& spec, Client& client, const Argv& argv, resp::Writer& out,
               bool locks_held, LockBatch* batch = nullptr);

  // The statistics entry of every row, found without Stats' mutex on the command path; built
  // once the table is final (after rename-command).
  void IndexCommandStats();

  // While loading (a replica installing a full sync), data commands answer -LOADING.
  void SetLoading(bool loading) { loading_.store(loading, std::memory_order_release); }
  bool loading() const { return loading_.load(std::memory_order_acquire); }

  // CLIENT PAUSE: until `until` (steady clock), clients' commands wait, all of them or (all =
  // false) those that write or may replicate. A later pause extends an earlier one and never
  // makes it less strict while both last. Unpause ends it at once.
  void Pause(std::chrono::steady_clock::time_point until, bool all);
  void Unpause() { pause_until_ns_.store(0, std::memory_order_release); }
  // How long this command must still wait (zero: run it now).
  std::chrono::steady_clock::duration PauseRemaining(const CommandSpec* spec,
                                                     const Client& client) const;

 private:
  // The one place that decides whether a command with these keys runs on this node: nullopt to
  // run it, else the redirect or refusal to answer (cluster mode: MOVED, ASK, CROSSSLOT,
  // TRYAGAIN, CLUSTERDOWN).
  std::optional<std::string> Route(Client& client, const CommandSpec& spec, const Argv& argv);
  // Takes the stripes of scope (or finds them in the lock batch); false when a reader could not
  // take them shared without waiting (it then reads a snapshot).
  bool Lock(const CommandSpec& spec, Client& client, const Argv& argv, LockBatch* batch,
            bool batchable, CommandScope& scope, storage::LockGuard& guard);
  void Account(const CommandSpec& spec, Client& client, const Argv& argv, resp::Writer& out,
               size_t before, std::chrono::steady_clock::time_point start);
  // Counts one call that took micros and answered error (nullopt: not an error reply).
  // The statistics of a command (this dispatcher's map of them, else the server's by name).
  CommandStats& StatsOf(const CommandSpec& spec);
  // Whether a call of spec that took micros goes to the slow log; LogIfSlow adds it then.
  bool Slow(const CommandSpec& spec, uint64_t micros) const;
  void LogIfSlow(const CommandSpec& spec, Client& client, const Argv& argv, uint64_t micros);
  void AccountCall(const CommandSpec& spec, Client& client, const Argv& argv,
                   std::optional<std::string_view> error, uint64_t micros);
  // The combined run of DispatchCombined, once its checks passed.
  void ExecuteCombined(const CommandSpec& spec, Client& client, std::span<const Argv> calls,
                       resp::Writer& out, LockBatch* batch);
  // The run of DispatchAcrossKeys, once its checks passed; false (nothing ran) when the
  // stripes of the keys could not all be taken without waiting.
  bool ExecuteAcrossKeys(const CommandSpec& spec, Client& client, std::span<const Argv> calls,
                         resp::Writer& out, LockBatch* batch);
  // Counts each call of a combined run (replies from starts[i] of bytes) in the statistics,
  // sharing the run's time since start among them.
  void AccountRun(const CommandSpec& spec, Client& client, std::span<const Argv> calls,
                  const std::string& bytes, const std::vector<size_t>& starts,
                  std::chrono::steady_clock::time_point start);

  Server& server_;
  std::unordered_map<const CommandSpec*, CommandStats*> command_stats_;
  std::atomic<bool> loading_{false};
  std::atomic<int64_t> pause_until_ns_{0};  // steady clock; 0 = not paused
  std::atomic<bool> pause_all_{false};
};

}  // namespace cuckood::server

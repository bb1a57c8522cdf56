#include "server/dispatcher.h"

#include <algorithm>

#include "server/cluster_mode.h"
#include "server/lock_batch.h"
#include "server/pubsub.h"
#include "server/replication.h"
#include "server/server.h"
#include "server/util.h"

namespace cuckood::server {
namespace {

constexpr std::string_view kLoadingError =
    "LOADING cuckood is loading the dataset from its primary (full sync)";
constexpr std::string_view kReadOnlyReplicaError =
    "READONLY You can't write against a read only replica.";
constexpr std::string_view kNoAuthError = "NOAUTH Authentication required.";

// Redis's text for an unknown command: the name and the first arguments, quoted.
std::string UnknownCommandError(const Argv& argv) {
  std::string args;
  for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
    size_t room = 128 - args.size();
    args += "'" + std::string(argv[i].substr(0, room)) + "' ";
  }
  std::string msg = "ERR unknown command '" + std::string(argv[0].substr(0, 128)) +
                    "', with args beginning with: " + args;
  for (auto& c : msg) {
    if (c == '\r' || c == '\n') {
      c = ' ';
    }
  }
  return msg;
}

// The thread's vectors for CommandScope, kept between commands (a few: scopes nest).
template <class T>
std::vector<std::vector<T>>& Spares() {
  thread_local std::vector<std::vector<T>> spares;
  return spares;
}
template <class T>
std::vector<T> TakeSpare() {
  auto& spares = Spares<T>();
  if (spares.empty()) {
    return {};
  }
  std::vector<T> v = std::move(spares.back());
  spares.pop_back();
  return v;
}
template <class T>
void GiveBack(std::vector<T>&& v) {
  constexpr size_t kMaxSpares = 8;
  constexpr size_t kMaxCapacity = 1024;  // (a scope over every stripe is not kept)
  auto& spares = Spares<T>();
  if (spares.size() < kMaxSpares && v.capacity() > 0 && v.capacity() <= kMaxCapacity) {
    v.clear();
    spares.push_back(std::move(v));
  }
}

}  // namespace

CommandScope::CommandScope() : keys(TakeSpare<std::string_view>()), stripes(TakeSpare<size_t>()) {}

CommandScope::~CommandScope() {
  GiveBack(std::move(keys));
  GiveBack(std::move(stripes));
}

Dispatcher::Dispatcher(Server& server) : server_(server) {}

void Dispatcher::IndexCommandStats() {
  command_stats_.clear();
  for (const CommandSpec* spec : server_.commands().all()) {
    command_stats_.emplace(spec, &server_.stats().For(spec->name));
    for (const auto& sub : spec->subcommands) {
      command_stats_.emplace(&sub, &server_.stats().For(sub.name));
    }
  }
}

void Dispatcher::Dispatch(Client& client, const Argv& argv, resp::Writer& out, LockBatch* batch) {
  if (argv.empty()) {
    return;
  }
  Dispatch(client, server_.commands().Find(argv[0]), argv, out, batch);
}

std::optional<std::string> Dispatcher::Route(Client& client, const CommandSpec& spec,
                                             const Argv& argv) {
  if (server_.cluster() == nullptr) {
    return std::nullopt;  // one node holds every key
  }
  return ClusterRedirect(server_, client, spec, argv);
}

void Dispatcher::Dispatch(Client& client, const CommandSpec* spec, const Argv& argv,
                          resp::Writer& out, LockBatch* batch) {
  Stats& stats = server_.stats();
  auto reject = [&](std::string_view msg) {
    if (client.in_multi) {
      client.multi_dirty = true;
    }
    stats.CountError(msg);
    out.Error(msg);
  };
  if (spec == nullptr) {
    reject(UnknownCommandError(argv));
    return;
  }
  const bool queue_unchecked = client.in_multi && (spec->flags & kHandlerArity);
  if (!queue_unchecked && !ArityAccepts(*spec, argv.size())) {
    stats.For(spec->name).rejected_calls++;
    reject(ArityError(spec->name));
    return;
  }
  if (!client.authenticated && !(spec->flags & kNoAuth)) {
    stats.For(spec->name).rejected_calls++;
    stats.CountError(kNoAuthError);
    out.Error(kNoAuthError);
    return;
  }
  // Checked before queuing too, as Redis does.
  if (auto redirect = Route(client, *spec, argv)) {
    stats.For(spec->name).rejected_calls++;
    reject(*redirect);
    return;
  }
  if (loading() && !(spec->flags & kLoading)) {
    reject(kLoadingError);
    return;
  }
  if ((spec->flags & kWrite) && server_.replication().is_replica()) {
    reject(kReadOnlyReplicaError);
    return;
  }
  if (InSubscribedMode(client) && !AllowedInSubscribedMode(*spec)) {
    stats.For(spec->name).rejected_calls++;
    reject(SubscribedModeError(*spec, argv));
    return;
  }
  if (client.in_multi && !(spec->flags & kNoMulti)) {
    client.queued.emplace_back(argv.begin(), argv.end());
    out.SimpleString("QUEUED");
    return;
  }
  Execute(*spec, client, argv, out, false, batch);
}

void Dispatcher::DispatchCombined(Client& client, const CommandSpec& spec,
                                  std::span<const Argv> calls, resp::Writer& out,
                                  LockBatch* batch) {
  // The checks of Dispatch, made once: the calls share the client, the command and the key, so
  // each would pass or fail them alike (they are made again, call by call, when one fails).
  // (After ASKING only the next call may run on an importing slot: calls run one by one then.)
  const bool runs_as_one = calls.size() > 1 && spec.combined != nullptr && !client.in_multi &&
                           !client.cluster_asking && ArityAccepts(spec, calls[0].size()) &&
                           (client.authenticated || (spec.flags & kNoAuth)) && !loading() &&
                           !((spec.flags & kWrite) && server_.replication().is_replica()) &&
                           !InSubscribedMode(client) && !Route(client, spec, calls[0]);
  if (runs_as_one) {
    ExecuteCombined(spec, client, calls, out, batch);
    return;
  }
  for (const Argv& argv : calls) {
    Dispatch(client, &spec, argv, out, batch);
  }
}

bool Dispatcher::Lock(const CommandSpec& spec, Client& client, const Argv& argv, LockBatch* batch,
                      bool batchable, CommandScope& scope, storage::LockGuard& guard) {
  storage::LockManager& locks = server_.db().locks();
  scope.exclusive = (spec.flags & kWrite) != 0;
  if (spec.flags & kLockAll) {
    scope.stripes.resize(locks.stripes());
    for (size_t i = 0; i < scope.stripes.size(); ++i) {
      scope.stripes[i] = i;
    }
  } else {
    for (auto key : scope.keys) {
      scope.stripes.push_back(locks.StripeOf(client.db, key));
    }
    if (scope.exclusive) {
      if (auto other = CommandOtherDbKey(spec, argv)) {
        scope.stripes.push_back(locks.StripeOf(other->db, other->key));
      }
    }
    std::sort(scope.stripes.begin(), scope.stripes.end());
    scope.stripes.erase(std::unique(scope.stripes.begin(), scope.stripes.end()),
                        scope.stripes.end());
  }
  if (scope.exclusive && batchable && !scope.stripes.empty()) {
    client.write_stripe = static_cast<int64_t>(scope.stripes.front());  // (key-affinity)
  }
  if (batchable) {
    if (batch->Covers(scope.stripes, scope.exclusive)) {
      return true;
    }
    size_t held = 0;
    if (scope.exclusive && batch->HeldElsewhere(locks, scope.stripes, &held)) {
      // Another thread holds the key (most often another io thread's batch): the connection
      // counts it (Client::contended_stripe, key-affinity).
      client.contended_stripe = static_cast<int64_t>(held);
      if (client.may_park) {
        // Rather than end this thread's batch and wait for it, the connection sets the command
        // aside and runs it after the other connections' work of this round
        // (Connection::Park).
        client.parked = true;
        return false;
      }
    }
    batch->End();
  }
  if (scope.exclusive) {
    storage::LockGuard taken(&locks, scope.stripes);
    if (batchable) {
      batch->Keep(std::move(taken), true);
    } else {
      guard = std::move(taken);
    }
    return true;
  }
  // Readers hold their keys' stripes shared, so no writer of those keys is half-way while they
  // read the in-memory cache. When a writer holds one (a long CF.COMPACT), the reader does not
  // wait: it reads a RocksDB snapshot instead.
  auto taken = storage::LockGuard::TryShared(&locks, scope.stripes);
  if (!taken) {
    return false;
  }
  if (batchable) {
    batch->Keep(std::move(*taken), false);
  } else {
    guard = std::move(*taken);
  }
  return true;
}

void Dispatcher::Execute(const CommandSpec& spec, Client& client, const Argv& argv,
                         resp::Writer& out, bool locks_held, LockBatch* batch) {
  const auto start = std::chrono::steady_clock::now();
  const size_t before = out.buffer()->size();
  const bool write = (spec.flags & kWrite) != 0;
  const bool batchable = batch != nullptr && client.lock_batching && !locks_held &&
                         spec.first_key > 0 && !(spec.flags & (kLockAll | kBackground));
  const bool groupable =
      batchable && write && (spec.flags & kGroupCommit) && server_.live_config().group_commit();
  if (batch != nullptr) {
    if (!groupable) {
      batch->EndGroup();  // (no command but those of the group may see its uncommitted changes)
    }
    if (!batchable && !locks_held) {
      batch->End();
    }
  }
  CommandScope scope;
  storage::LockGuard guard;
  if (write || spec.first_key > 0) {
    CommandKeys(spec, argv, &scope.keys);
  }
  if (!locks_held && (write || spec.first_key > 0)) {
    if (Lock(spec, client, argv, batch, batchable, scope, guard)) {
      scope.storage.stripes_held = true;
    } else if (client.parked) {
      return;  // (set aside: it runs again later; nothing ran, nothing is counted)
    } else {
      scope.storage.read = storage::ReadMode::kSnapshot;
    }
  } else if (locks_held) {
    scope.storage.stripes_held = true;  // (EXEC: every queued command's stripes)
  }
  if (groupable) {
    scope.storage.group = batch->Join(server_.db(), client, out.buffer(), before);
  }
  // Stripes are per database (client.db); the namespace it maps to changes only while SWAPDB
  // holds every stripe, so it is read now that this command's are held.
  CommandContext ctx{server_,       client,      out, argv, server_.db().Namespace(client.db),
                     scope.storage, std::nullopt};
  if ((spec.flags & kHandlerArity) && !ArityAccepts(spec, argv.size())) {
    // Queued inside MULTI without the arity check, as RedisBloom 2.8's commands are (they
    // check it before opening the key, so nothing counts as modified).
    out.Error(ArityError(spec.name));
    ctx.NothingModified();
  } else {
    spec.handler(ctx);
  }
  if (write && !(spec.flags & kNoWatchBump)) {
    // Touched while the key locks are held, so EXEC (which holds them too) sees it or not at
    // all.
    server_.watches().Touch(client.db, ctx.modified ? *ctx.modified : scope.keys);
  }
  guard.Release();
  Account(spec, client, argv, out, before, start);
  if (batch != nullptr && batch->group_full()) {
    batch->EndGroup();
  }
}

void Dispatcher::ExecuteCombined(const CommandSpec& spec, Client& client,
                                 std::span<const Argv> calls, resp::Writer& out, LockBatch* batch) {
  // Execute's steps for one command, with the calls' first argv (the key and the stripes are
  // the same for all of them).
  const auto start = std::chrono::steady_clock::now();
  const size_t before = out.buffer()->size();
  const Argv& first = calls[0];
  const bool write = (spec.flags & kWrite) != 0;
  const bool batchable = batch != nullptr && client.lock_batching && spec.first_key > 0 &&
                         !(spec.flags & (kLockAll | kBackground));
  const bool groupable =
      batchable && write && (spec.flags & kGroupCommit) && server_.live_config().group_commit();
  if (batch != nullptr) {
    if (!groupable) {
      batch->EndGroup();
    }
    if (!batchable) {
      batch->End();
    }
  }
  CommandScope scope;
  storage::LockGuard guard;
  CommandKeys(spec, first, &scope.keys);
  if (Lock(spec, client, first, batch, batchable, scope, guard)) {
    scope.storage.stripes_held = true;
  } else {
    scope.storage.read = storage::ReadMode::kSnapshot;
  }
  if (groupable) {
    // (each call answers the group's error if its write fails)
    scope.storage.group = batch->Join(server_.db(), client, out.buffer(), before, calls.size());
  }
  CommandContext ctx{server_,       client,      out, first, server_.db().Namespace(client.db),
                     scope.storage, std::nullopt};
  thread_local std::vector<size_t> starts;
  starts.clear();
  spec.combined(ctx, calls, &starts);
  if (write && !(spec.flags & kNoWatchBump)) {
    server_.watches().Touch(client.db, ctx.modified ? *ctx.modified : scope.keys);
  }
  guard.Release();
  AccountRun(spec, client, calls, *out.buffer(), starts, start);
  if (batch != nullptr && batch->group_full()) {
    batch->EndGroup();
  }
}

void Dispatcher::AccountRun(const CommandSpec& spec, Client& client, std::span<const Argv> calls,
                            const std::string& bytes, const std::vector<size_t>& starts,
                            std::chrono::steady_clock::time_point start) {
  const auto micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  const uint64_t n = calls.size();
  if (n == 0) {
    return;
  }
  Stats& stats = server_.stats();
  stats.combined_runs.fetch_add(1, std::memory_order_relaxed);
  stats.combined_calls.fetch_add(n, std::memory_order_relaxed);
  // Each call counts as a command of its own, as AccountCall counts one, with the run's time
  // shared out so that the calls' times add up to the run's (the first micros % n calls one
  // microsecond more): the counters and the histogram are added to once per run, not per call.
  CommandStats& cs = StatsOf(spec);
  const uint64_t share = micros / n;
  const uint64_t longer = micros % n;
  cs.calls += n;
  cs.usec += micros;
  cs.latency.Record(share + 1, longer);
  cs.latency.Record(share, n - longer);
  stats.total_commands_processed += n;
  client.last_command = spec.name;
  for (size_t i = 0; i < n; ++i) {
    // Each call's reply is one simple value: an error reply is "-text\r\n".
    if (i < starts.size() && starts[i] < bytes.size() && bytes[starts[i]] == '-') {
      const size_t end = bytes.find('\r', starts[i]);
      cs.failed_calls++;
      stats.CountError(std::string_view(bytes).substr(
          starts[i] + 1, (end == std::string::npos ? bytes.size() : end) - starts[i] - 1));
    }
  }
  if (Slow(spec, share + (longer > 0 ? 1 : 0))) {
    for (size_t i = 0; i < n; ++i) {
      LogIfSlow(spec, client, calls[i], share + (i < longer ? 1 : 0));
    }
  }
}

CommandStats& Dispatcher::StatsOf(const CommandSpec& spec) {
  auto found = command_stats_.find(&spec);
  return found != command_stats_.end() ? *found->second : server_.stats().For(spec.name);
}

bool Dispatcher::Slow(const CommandSpec& spec, uint64_t micros) const {
  const int64_t threshold = server_.live_config().slowlog_threshold();
  return threshold >= 0 && static_cast<int64_t>(micros) >= threshold &&
         !(spec.flags & kSkipSlowlog);
}

void Dispatcher::LogIfSlow(const CommandSpec& spec, Client& client, const Argv& argv,
                           uint64_t micros) {
  if (Slow(spec, micros)) {
    server_.slowlog().Add(client, argv, static_cast<int64_t>(micros),
                          server_.live_config().slowlog_max_len());
  }
}

void Dispatcher::DispatchAcrossKeys(Client& client, const CommandSpec& spec,
                                    std::span<const Argv> calls, resp::Writer& out,
                                    LockBatch* batch) {
  // DispatchCombined's checks, and Route for every call (the keys differ). Only reads run
  // this way: consecutive reads of one client see the same data however they are ordered
  // among themselves, once every key's stripe is held.
  bool as_one = calls.size() > 1 && spec.across_keys != nullptr && !(spec.flags & kWrite) &&
                batch != nullptr && client.lock_batching && !client.in_multi &&
                !client.cluster_asking && ArityAccepts(spec, calls[0].size()) &&
                (client.authenticated || (spec.flags & kNoAuth)) && !loading() &&
                !InSubscribedMode(client) && spec.first_key == 1 &&
                !(spec.flags & (kLockAll | kBackground));
  for (size_t i = 0; as_one && i < calls.size(); ++i) {
    as_one = Route(client, spec, calls[i]) == std::nullopt;
  }
  if (as_one) {
    as_one = ExecuteAcrossKeys(spec, client, calls, out, batch);
  }
  if (!as_one) {
    for (const Argv& argv : calls) {
      Dispatch(client, &spec, argv, out, batch);
    }
  }
}

bool Dispatcher::ExecuteAcrossKeys(const CommandSpec& spec, Client& client,
                                   std::span<const Argv> calls, resp::Writer& out,
                                   LockBatch* batch) {
  const auto start = std::chrono::steady_clock::now();
  batch->EndGroup();  // (as Execute: a read sees committed writes only)
  storage::LockManager& locks = server_.db().locks();
  CommandScope scope;
  for (const Argv& call : calls) {
    scope.stripes.push_back(locks.StripeOf(client.db, call[1]));
  }
  std::sort(scope.stripes.begin(), scope.stripes.end());
  scope.stripes.erase(std::unique(scope.stripes.begin(), scope.stripes.end()), scope.stripes.end());
  if (!batch->Covers(scope.stripes, false)) {
    batch->End();
    auto taken = storage::LockGuard::TryShared(&locks, scope.stripes);
    if (!taken) {
      return false;  // (a writer holds one: the calls run one by one)
    }
    batch->Keep(std::move(*taken), false);
  }
  scope.storage.stripes_held = true;
  CommandContext ctx{server_,       client,      out, calls[0], server_.db().Namespace(client.db),
                     scope.storage, std::nullopt};
  thread_local std::vector<size_t> starts;
  starts.clear();
  spec.across_keys(ctx, calls, &starts);
  AccountRun(spec, client, calls, *out.buffer(), starts, start);
  return true;
}

void Dispatcher::Account(const CommandSpec& spec, Client& client, const Argv& argv,
                         resp::Writer& out, size_t before,
                         std::chrono::steady_clock::time_point start) {
  const auto micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                std::chrono::steady_clock::now() - start)
                                                .count());
  // The writer records the error reply it wrote; the command failed when its reply is one (an
  // EXEC whose queued commands failed replies with an array, as in Redis).
  AccountCall(spec, client, argv, out.ErrorAt(before), micros);
}

void Dispatcher::AccountCall(const CommandSpec& spec, Client& client, const Argv& argv,
                             std::optional<std::string_view> error, uint64_t micros) {
  Stats& stats = server_.stats();
  CommandStats& cs = StatsOf(spec);
  cs.calls++;
  cs.usec += micros;
  cs.latency.Record(micros);
  stats.total_commands_processed++;
  if (error) {
    cs.failed_calls++;
    stats.CountError(*error);
  }
  client.last_command = spec.name;
  LogIfSlow(spec, client, argv, micros);
}

void Dispatcher::Pause(std::chrono::steady_clock::time_point until, bool all) {
  const int64_t ns = until.time_since_epoch().count();
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  const int64_t current = pause_until_ns_.load(std::memory_order_acquire);
  if (current > now) {
    // Paused already: the later end and the stricter mode win.
    pause_all_.store(all || pause_all_.load(std::memory_order_acquire), std::memory_order_release);
    pause_until_ns_.store(std::max(ns, current), std::memory_order_release);
    return;
  }
  pause_all_.store(all, std::memory_order_release);
  pause_until_ns_.store(ns, std::memory_order_release);
}

std::chrono::steady_clock::duration Dispatcher::PauseRemaining(const CommandSpec* spec,
                                                               const Client& client) const {
  const int64_t until_ns = pause_until_ns_.load(std::memory_order_acquire);
  if (until_ns == 0) {
    return std::chrono::steady_clock::duration::zero();  // (no clock read on the common path)
  }
  const auto until =
      std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(until_ns));
  const auto now = std::chrono::steady_clock::now();
  if (spec == nullptr || until <= now) {
    return std::chrono::steady_clock::duration::zero();
  }
  if (pause_all_.load(std::memory_order_acquire)) {
    return until - now;
  }
  // WRITE: writes and the commands that may replicate (PUBLISH), and an EXEC that queued one.
  auto writes = [](const CommandSpec* s) {
    return s != nullptr && ((s->flags & kWrite) || s->name == "publish" || s->name == "spublish");
  };
  bool waits = writes(spec);
  if (!waits && spec->name == "exec" && client.in_multi) {
    for (const auto& q : client.queued) {
      if (!q.empty() && writes(server_.commands().Find(q[0]))) {
        waits = true;
        break;
      }
    }
  }
  return waits ? until - now : std::chrono::steady_clock::duration::zero();
}

}  // namespace cuckood::server

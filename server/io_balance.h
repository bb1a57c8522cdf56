// How many io threads serve connections (adaptive-io-threads).
//
// Every io thread can run any connection, and with one thread per core a connection is placed on
// one of them when it is accepted. That is right when the cores are the server's. When clients
// (or anything else) run on the same cores, the threads compete with them: a command-at-a-time
// client keeps each of two io threads waking, running a few commands and sleeping again, their
// commit waits hand off to each other, and every wake-up takes CPU from the client that was
// about to send the next command (2 cores shared with redis-benchmark: `CF.ADD` over 1,000 keys
// at -P 1 ran 25–30% faster with one io thread than with two, while at -P 16, where the client
// needs less CPU, two threads ran 25% faster than one).
//
// So the server measures each io thread's CPU time, its time waiting for a CPU
// while runnable (the kernel's schedstat) and its voluntary sleeps, the machine's idle CPU and
// the commands run, and keeps `active` threads in use (1 ... all):
//   - one fewer when the active threads wait for a CPU at least 30% as long as they run (the
//     cores are oversubscribed) while they sleep every few commands (under 32 commands a sleep:
//     their rounds are short, the work would fit in fewer threads' rounds);
//   - one more when the busiest active thread runs at least 80% of the time and the machine has
//     at least 0.4 of a core idle (there is a core for another thread to run on).
// Samples are taken every 50 ms; a thread is taken out of use on the last 200 ms and one more
// taken in on the last 100 ms, never sooner than 200 ms after the previous change; nothing
// changes below 2,000 commands a second. On a host whose cores nobody else wants, the threads
// never wait for a CPU, so nothing is ever taken away.
//
// Connections follow `active` at their next read (server/connection.h, Place): a connection
// accepted by thread i lives on i while i < active, else on i % active. Connections that cannot
// move (TLS, subscribers, MULTI/WATCH, replication links) stay where they are and are served
// there as before.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cuckood::server {

class IoBalance {
 public:
  // What one sample read (cumulative counters).
  struct ThreadSample {
    uint64_t cpu_ns = 0;   // time on a CPU
    uint64_t wait_ns = 0;  // time runnable, waiting for a CPU
    uint64_t sleeps = 0;   // voluntary context switches
  };
  struct Sample {
    std::chrono::steady_clock::time_point at{};
    std::vector<ThreadSample> threads;  // one per io thread
    double idle_seconds = 0;            // of all CPUs together (/proc/stat idle + iowait)
    uint64_t commands = 0;
  };
  struct Limits {
    double min_rate = 2000;        // commands a second below which nothing changes
    double oversubscribed = 0.30;  // wait / cpu of the active threads that counts as contended
    double short_rounds = 32;      // commands per voluntary sleep below which rounds are short
    double busy = 0.80;            // CPU share of the busiest active thread that asks for help
    double idle_cores = 0.40;      // idle CPU of the machine a further thread could use
  };
  // The number of active threads after a window from `before` to `after` (same threads), when
  // `active` of `total` are in use now.
  static size_t Decide(const Sample& before, const Sample& after, size_t active, size_t total,
                       const Limits& limits);

  explicit IoBalance(size_t threads);
  ~IoBalance();
  IoBalance(const IoBalance&) = delete;
  IoBalance& operator=(const IoBalance&) = delete;

  // Each io thread names itself once, on itself, before it runs connections.
  void SetThread(size_t index, pid_t tid);
  // Starts sampling (a thread of its own); commands() gives the commands run so far, enabled()
  // the setting (while false, every thread is active).
  void Start(std::function<uint64_t()> commands, std::function<bool()> enabled);
  void Stop();

  size_t total() const { return total_; }
  size_t active() const { return active_.load(std::memory_order_relaxed); }
  // The io thread of a connection accepted by thread `origin`.
  size_t Place(size_t origin) const {
    const size_t k = active();
    return origin < k ? origin : origin % k;
  }
  uint64_t changes() const { return changes_.load(std::memory_order_relaxed); }

 private:
  // Reads the counters now; false when the kernel does not give them (nothing changes then).
  bool Read(Sample* out) const;
  void Loop(std::function<uint64_t()> commands, std::function<bool()> enabled);

  const size_t total_;
  std::vector<std::atomic<pid_t>> tids_;
  std::atomic<size_t> active_;
  std::atomic<uint64_t> changes_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace cuckood::server

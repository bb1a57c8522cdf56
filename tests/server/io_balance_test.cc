// adaptive-io-threads (server/io_balance.h): how many io threads stay in use, from what a window
// of the kernel's counters says, and where a connection then lives.
#include "server/io_balance.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

using cuckood::server::IoBalance;

namespace {

// A window of 200 ms over `threads` io threads: per thread its CPU share, its share of the
// window spent waiting for a CPU and its voluntary sleeps; the machine's idle cores; commands.
struct Window {
  double cpu[4] = {0, 0, 0, 0};
  double wait[4] = {0, 0, 0, 0};
  uint64_t sleeps[4] = {0, 0, 0, 0};
  double idle_cores = 0;
  uint64_t commands = 0;
  // Thread i's CPU share, wait share and sleeps.
  void Thread(size_t i, double cpu_share, double wait_share, uint64_t n_sleeps) {
    cpu[i] = cpu_share;
    wait[i] = wait_share;
    sleeps[i] = n_sleeps;
  }
};

constexpr double kSeconds = 0.2;

size_t DecideFor(const Window& w, size_t active, size_t total) {
  IoBalance::Sample before;
  IoBalance::Sample after;
  before.at = std::chrono::steady_clock::time_point(std::chrono::seconds(100));
  after.at = before.at + std::chrono::milliseconds(200);
  before.threads.resize(total);
  after.threads.resize(total);
  for (size_t i = 0; i < total; ++i) {
    before.threads[i] = {1'000'000'000, 500'000'000, 1000};
    after.threads[i] = {
        before.threads[i].cpu_ns + static_cast<uint64_t>(w.cpu[i] * kSeconds * 1e9),
        before.threads[i].wait_ns + static_cast<uint64_t>(w.wait[i] * kSeconds * 1e9),
        before.threads[i].sleeps + w.sleeps[i]};
  }
  before.idle_seconds = 5000;
  after.idle_seconds = 5000 + w.idle_cores * kSeconds;
  before.commands = 1'000'000;
  after.commands = before.commands + w.commands;
  return IoBalance::Decide(before, after, active, total, IoBalance::Limits{});
}

}  // namespace

TEST_CASE("threads that wait for the CPU and sleep every few commands give one up",
          "[io_balance]") {
  // (2 io threads beside a one-command-at-a-time client on 2 cores: 63k commands a second, the
  // threads waiting half as long as they ran and sleeping every 6 commands)
  Window w;
  w.Thread(0, 0.58, 0.18, 820);
  w.Thread(1, 0.43, 0.36, 1300);
  w.commands = 12'600;
  CHECK(DecideFor(w, 2, 2) == 1);
  // Three of four in use: one fewer, never all at once.
  Window four = w;
  four.Thread(2, 0.5, 0.3, 1000);
  CHECK(DecideFor(four, 3, 4) == 2);
  // One thread is the least.
  CHECK(DecideFor(w, 1, 2) == 1);
}

TEST_CASE("threads with long rounds or a CPU of their own keep their number", "[io_balance]") {
  Window contended;  // (pipelined clients: waits, but ~100 commands between sleeps)
  contended.Thread(0, 0.80, 0.09, 300);
  contended.Thread(1, 0.67, 0.22, 350);
  contended.commands = 65'000;
  // (waits below 30% of the CPU time: 0.31 / 1.47)
  CHECK(DecideFor(contended, 2, 2) == 2);
  // Waiting as long, but sleeping every ~100 commands: the rounds are long.
  contended.Thread(0, 0.80, 0.4, 300);
  contended.Thread(1, 0.67, 0.4, 350);
  CHECK(DecideFor(contended, 2, 2) == 2);
  // Sleeping every few commands with cores of their own (a server whose clients are elsewhere).
  Window dedicated;
  dedicated.Thread(0, 0.5, 0.01, 4000);
  dedicated.Thread(1, 0.5, 0.01, 4000);
  dedicated.commands = 20'000;
  CHECK(DecideFor(dedicated, 2, 2) == 2);
}

TEST_CASE("a busy thread with an idle core beside it takes one more in", "[io_balance]") {
  Window w;  // (one thread at -P 16 over 1,000 keys: the client leaves 0.76 of a core idle)
  w.Thread(0, 0.99, 0, 1);
  w.idle_cores = 0.76;
  w.commands = 52'000;
  CHECK(DecideFor(w, 1, 2) == 2);
  CHECK(DecideFor(w, 2, 2) == 2);  // (all in use already)
  Window four = w;
  CHECK(DecideFor(four, 1, 4) == 2);  // one at a time
  // A command-at-a-time client that takes the other core: no idle core, no second thread.
  Window busy_client = w;
  busy_client.idle_cores = 0.18;
  busy_client.commands = 16'000;
  CHECK(DecideFor(busy_client, 1, 2) == 1);
  // Idle cores but a thread that is not busy: it is enough.
  Window light = w;
  light.Thread(0, 0.4, 0, 1);
  CHECK(DecideFor(light, 1, 2) == 1);
}

TEST_CASE("a nearly idle server or reset counters change nothing", "[io_balance]") {
  Window w;
  w.Thread(0, 0.02, 0.02, 50);
  w.Thread(1, 0.02, 0.02, 50);
  w.commands = 100;  // 500 a second
  CHECK(DecideFor(w, 2, 2) == 2);
  w.idle_cores = 2;
  w.Thread(0, 0.95, 0.02, 50);
  CHECK(DecideFor(w, 1, 2) == 1);
  // CONFIG RESETSTAT between two samples: the command counter went down.
  IoBalance::Sample before;
  IoBalance::Sample after;
  before.at = std::chrono::steady_clock::now();
  after.at = before.at + std::chrono::milliseconds(200);
  before.threads = {{0, 0, 0}, {0, 0, 0}};
  after.threads = {{100'000'000, 90'000'000, 1000}, {100'000'000, 90'000'000, 1000}};
  before.commands = 1'000'000;
  after.commands = 10;
  CHECK(IoBalance::Decide(before, after, 2, 2, IoBalance::Limits{}) == 2);
}

TEST_CASE("the sampler reads this process's threads and stops", "[io_balance]") {
  // (all threads of this test named as io threads: the sampler must read their counters, and a
  // server this idle keeps every thread in use)
  IoBalance balance(2);
  balance.SetThread(0, static_cast<pid_t>(::gettid()));
  balance.SetThread(1, static_cast<pid_t>(::gettid()));
  balance.Start([] { return uint64_t{0}; }, [] { return true; });
  usleep(300'000);
  balance.Stop();
  CHECK(balance.active() == 2);
  CHECK(balance.changes() == 0);
}

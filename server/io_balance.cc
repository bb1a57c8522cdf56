#include "server/io_balance.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>

namespace cuckood::server {

namespace {

constexpr auto kPeriod = std::chrono::milliseconds(50);
// A thread is taken out of use after kShrinkWindow of contention, and one more is taken in after
// kGrowWindow of demand: the first costs little when it comes late (the threads in use were
// contended anyway), the second costs the rate of the threads not yet in use.
constexpr auto kShrinkWindow = std::chrono::milliseconds(200);
constexpr auto kGrowWindow = std::chrono::milliseconds(100);
constexpr auto kSettle = std::chrono::milliseconds(200);  // after a change, before the next

// The whole of a small /proc file (nullopt-like: empty when it cannot be read).
std::string ReadSmallFile(const char* path) {
  std::string out;
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) {
    return out;
  }
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    out.append(buf, n);
  }
  std::fclose(f);
  return out;
}

// The number after `field` in a /proc status text ("voluntary_ctxt_switches:\t12").
bool StatusField(const std::string& text, const char* field, uint64_t* value) {
  size_t at = 0;
  const size_t len = std::strlen(field);
  while ((at = text.find(field, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      *value = std::strtoull(text.c_str() + at + len, nullptr, 10);
      return true;
    }
    at += len;
  }
  return false;
}

}  // namespace

size_t IoBalance::Decide(const Sample& before, const Sample& after, size_t active, size_t total,
                         const Limits& limits) {
  const double wall = std::chrono::duration<double>(after.at - before.at).count();
  if (wall <= 0 || active == 0 || active > total || after.threads.size() < active ||
      before.threads.size() < active) {
    return active;
  }
  if (after.commands < before.commands) {
    return active;  // (the counters were reset: CONFIG RESETSTAT)
  }
  const double commands = static_cast<double>(after.commands - before.commands);
  if (commands / wall < limits.min_rate) {
    return active;
  }
  double cpu = 0;
  double wait = 0;
  double sleeps = 0;
  double busiest = 0;
  for (size_t i = 0; i < active; ++i) {
    const auto& a = before.threads[i];
    const auto& b = after.threads[i];
    const double c = static_cast<double>(b.cpu_ns - a.cpu_ns) / 1e9;
    cpu += c;
    wait += static_cast<double>(b.wait_ns - a.wait_ns) / 1e9;
    sleeps += static_cast<double>(b.sleeps - a.sleeps);
    busiest = std::max(busiest, c / wall);
  }
  const double idle_cores = (after.idle_seconds - before.idle_seconds) / wall;
  if (active > 1 && cpu > 0 && wait >= limits.oversubscribed * cpu &&
      commands < limits.short_rounds * sleeps) {
    return active - 1;
  }
  if (active < total && busiest >= limits.busy && idle_cores >= limits.idle_cores) {
    return active + 1;
  }
  return active;
}

IoBalance::IoBalance(size_t threads) : total_(threads), tids_(threads), active_(threads) {}

IoBalance::~IoBalance() {
  Stop();
}

void IoBalance::SetThread(size_t index, pid_t tid) {
  if (index < tids_.size()) {
    tids_[index].store(tid);
  }
}

bool IoBalance::Read(Sample* out) const {
  out->at = std::chrono::steady_clock::now();
  out->threads.resize(total_);
  char path[64];
  for (size_t i = 0; i < total_; ++i) {
    const pid_t tid = tids_[i].load();
    if (tid <= 0) {
      return false;
    }
    std::snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", static_cast<int>(tid));
    const std::string sched = ReadSmallFile(path);
    unsigned long long run = 0;
    unsigned long long wait = 0;
    if (std::sscanf(sched.c_str(), "%llu %llu", &run, &wait) != 2) {
      return false;
    }
    std::snprintf(path, sizeof path, "/proc/self/task/%d/status", static_cast<int>(tid));
    uint64_t sleeps = 0;
    if (!StatusField(ReadSmallFile(path), "voluntary_ctxt_switches:", &sleeps)) {
      return false;
    }
    out->threads[i] = ThreadSample{run, wait, sleeps};
  }
  const std::string stat = ReadSmallFile("/proc/stat");
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0;
  if (std::sscanf(stat.c_str(), "cpu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                  &iowait) != 5) {
    return false;
  }
  static const double ticks = static_cast<double>(std::max(sysconf(_SC_CLK_TCK), 1L));
  out->idle_seconds = static_cast<double>(idle + iowait) / ticks;
  return true;
}

void IoBalance::Start(std::function<uint64_t()> commands, std::function<bool()> enabled) {
  if (total_ < 2 || thread_.joinable()) {
    return;  // (one thread: nothing to balance)
  }
  thread_ =
      std::thread([this, commands = std::move(commands), enabled = std::move(enabled)]() mutable {
        Loop(std::move(commands), std::move(enabled));
      });
}

void IoBalance::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void IoBalance::Loop(std::function<uint64_t()> commands, std::function<bool()> enabled) {
  std::deque<Sample> samples;  // the last kWindow of them, oldest first
  auto last_change = std::chrono::steady_clock::now();
  bool warned = false;
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, kPeriod, [this] { return stopping_; })) {
    if (!enabled()) {
      if (active_.load() != total_) {
        active_.store(total_);
        changes_.fetch_add(1);
      }
      samples.clear();
      continue;
    }
    Sample s;
    if (!Read(&s)) {
      if (!warned) {
        warned = true;
        spdlog::info(
            "adaptive-io-threads: the kernel gives no per-thread scheduler counters "
            "(/proc/self/task/*/schedstat); every io thread stays in use");
      }
      samples.clear();
      continue;
    }
    s.commands = commands();
    samples.push_back(std::move(s));
    while (samples.size() > 1 && samples.back().at - samples[1].at >= kShrinkWindow) {
      samples.pop_front();
    }
    const Sample& now = samples.back();
    if (now.at - last_change < kSettle) {
      continue;
    }
    // The newest sample at least `window` (less half a period) before now, taken after the last
    // change; null when there is none.
    auto since = [&](std::chrono::steady_clock::duration window) -> const Sample* {
      for (auto it = samples.rbegin(); it != samples.rend(); ++it) {
        if (it->at < last_change) {
          return nullptr;
        }
        if (now.at - it->at >= window - kPeriod / 2) {
          return &*it;
        }
      }
      return nullptr;
    };
    const size_t k = active_.load();
    size_t next = k;
    if (const Sample* before = since(kShrinkWindow)) {
      next = std::min(next, Decide(*before, now, k, total_, Limits{}));
    }
    if (const Sample* before = since(kGrowWindow); before != nullptr && next == k) {
      next = std::max(next, Decide(*before, now, k, total_, Limits{}));
    }
    if (next != k) {
      active_.store(next);
      changes_.fetch_add(1);
      last_change = now.at;
      spdlog::debug("adaptive-io-threads: {} of {} io threads in use", next, total_);
    }
  }
}

}  // namespace cuckood::server

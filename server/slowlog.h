// The slow log (SLOWLOG GET / LEN / RESET): the newest commands that took at least
// slowlog-log-slower-than microseconds, at most slowlog-max-len of them. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace cuckood::server {

struct Client;

struct SlowlogEntry {
  uint64_t id;
  int64_t unix_time;
  int64_t micros;
  std::vector<std::string> argv;
  std::string addr;
  std::string name;
};

class Slowlog {
 public:
  // Records a command (its arguments cut as Redis cuts them) and keeps the newest max_len.
  void Add(const Client& client, const std::vector<std::string_view>& argv, int64_t micros,
           uint64_t max_len);
  // The newest count entries (all when count < 0), newest first.
  std::vector<SlowlogEntry> Get(int64_t count);
  size_t Len();
  void Reset();

 private:
  std::mutex mu_;
  std::deque<SlowlogEntry> entries_;
  uint64_t next_id_ = 0;
};

}  // namespace cuckood::server

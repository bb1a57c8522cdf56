#include "server/slowlog.h"

#include <algorithm>

#include "server/client.h"
#include "storage/engine.h"

namespace cuckood::server {

void Slowlog::Add(const Client& client, const std::vector<std::string_view>& argv, int64_t micros,
                  uint64_t max_len) {
  SlowlogEntry e;
  e.unix_time = static_cast<int64_t>(storage::NowMs() / 1000);
  e.micros = micros;
  // Redis keeps at most 32 arguments, each cut to 128 bytes.
  const size_t n = std::min<size_t>(argv.size(), 32);
  for (size_t i = 0; i < n; ++i) {
    if (i == 31 && argv.size() > 32) {
      e.argv.push_back("... (" + std::to_string(argv.size() - 31) + " more arguments)");
      break;
    }
    std::string a(argv[i].substr(0, 128));
    if (argv[i].size() > 128) {
      a += "... (" + std::to_string(argv[i].size() - 128) + " more bytes)";
    }
    e.argv.push_back(std::move(a));
  }
  e.addr = client.addr;
  e.name = client.name;
  std::lock_guard lock(mu_);
  e.id = next_id_++;
  entries_.push_front(std::move(e));
  while (entries_.size() > max_len) {
    entries_.pop_back();
  }
}

std::vector<SlowlogEntry> Slowlog::Get(int64_t count) {
  std::lock_guard lock(mu_);
  const size_t n =
      count < 0 ? entries_.size() : std::min<size_t>(entries_.size(), static_cast<size_t>(count));
  return {entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(n)};
}

size_t Slowlog::Len() {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void Slowlog::Reset() {
  std::lock_guard lock(mu_);
  entries_.clear();
}

}  // namespace cuckood::server

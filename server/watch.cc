#include "server/watch.h"

#include "server/client.h"

namespace cuckood::server {
namespace {

uint16_t DbOfId(const std::string& id) {
  return static_cast<uint16_t>((static_cast<uint8_t>(id[0]) << 8) | static_cast<uint8_t>(id[1]));
}

}  // namespace

std::string WatchRegistry::Id(uint16_t db, std::string_view key) {
  std::string id(2, '\0');
  id[0] = static_cast<char>(db >> 8);
  id[1] = static_cast<char>(db & 0xff);
  id.append(key);
  return id;
}

uint64_t WatchRegistry::Watch(uint16_t db, std::string_view key) {
  std::lock_guard lock(mu_);
  auto& e = watches_[Id(db, key)];
  e.watchers++;
  count_ = watches_.size();
  return e.version;
}

uint64_t WatchRegistry::Version(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = watches_.find(id);
  return it == watches_.end() ? UINT64_MAX : it->second.version;
}

void WatchRegistry::UnwatchAll(Client& client) {
  if (client.watched.empty()) {
    return;
  }
  std::lock_guard lock(mu_);
  for (auto& [id, version] : client.watched) {
    auto it = watches_.find(id);
    if (it != watches_.end() && --it->second.watchers == 0) {
      watches_.erase(it);
    }
  }
  count_ = watches_.size();
  client.watched.clear();
}

void WatchRegistry::Touch(uint16_t db, const std::vector<std::string_view>& keys) {
  if (count_.load(std::memory_order_acquire) == 0) {
    return;  // (the common case: nobody watches anything, no mutex on the write path)
  }
  std::lock_guard lock(mu_);
  for (auto key : keys) {
    auto it = watches_.find(Id(db, key));
    if (it != watches_.end()) {
      it->second.version = ++clock_;
    }
  }
}

void WatchRegistry::TouchAll(std::optional<uint16_t> db) {
  std::lock_guard lock(mu_);
  for (auto& [id, e] : watches_) {
    if (!db || DbOfId(id) == *db) {
      e.version = ++clock_;
    }
  }
}

std::vector<std::string> WatchRegistry::Keys(uint16_t db) {
  std::vector<std::string> keys;
  if (count_.load(std::memory_order_acquire) == 0) {
    return keys;
  }
  std::lock_guard lock(mu_);
  for (const auto& [id, e] : watches_) {
    if (DbOfId(id) == db) {
      keys.push_back(id.substr(2));
    }
  }
  return keys;
}

}  // namespace cuckood::server

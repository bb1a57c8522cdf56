#include "server/clients.h"

#include <algorithm>

#include "server/connection.h"

namespace cuckood::server {

void ClientRegistry::Register(const std::shared_ptr<Connection>& conn) {
  std::lock_guard lock(mu_);
  conns_[conn->id()] = conn;
  connected_++;
}

void ClientRegistry::Unregister(uint64_t id) {
  std::lock_guard lock(mu_);
  if (conns_.erase(id) > 0) {
    connected_--;
  }
  gone_.notify_all();
}

std::vector<std::shared_ptr<Connection>> ClientRegistry::All() {
  std::vector<std::shared_ptr<Connection>> out;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, weak] : conns_) {
      if (auto c = weak.lock()) {
        out.push_back(std::move(c));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->id() < b->id(); });
  return out;
}

void ClientRegistry::WaitAllGone(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  gone_.wait_for(lock, timeout, [this] { return conns_.empty(); });
  conns_.clear();
}

}  // namespace cuckood::server

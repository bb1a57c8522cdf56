#include "storage/locks.h"

#include <algorithm>
#include <iterator>

namespace cuckood::storage {

LockManager::LockManager(size_t stripes) : mutexes_(std::max<size_t>(stripes, 1)) {}

size_t LockManager::StripeOf(uint16_t ns, std::string_view key) const {
  // FNV-1a over the namespace and the key; cheap and well spread for short keys.
  uint64_t h = 1469598103934665603ULL;
  h = (h ^ ns) * 1099511628211ULL;
  for (unsigned char c : key) {
    h = (h ^ c) * 1099511628211ULL;
  }
  return static_cast<size_t>(h % mutexes_.size());
}

LockGuard::LockGuard(LockManager* mgr, std::vector<size_t> stripes, bool shared)
    : mgr_(mgr), stripes_(std::move(stripes)), shared_(shared) {
  std::sort(stripes_.begin(), stripes_.end());
  stripes_.erase(std::unique(stripes_.begin(), stripes_.end()), stripes_.end());
  for (size_t s : stripes_) {
    if (shared_) {
      mgr_->stripe(s).lock_shared();
    } else {
      mgr_->stripe(s).lock();
    }
  }
}

std::optional<LockGuard> LockGuard::TryShared(LockManager* mgr, std::vector<size_t> stripes) {
  std::sort(stripes.begin(), stripes.end());
  stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  for (size_t i = 0; i < stripes.size(); ++i) {
    if (!mgr->stripe(stripes[i]).try_lock_shared()) {
      while (i-- > 0) {
        mgr->stripe(stripes[i]).unlock_shared();
      }
      return std::nullopt;
    }
  }
  LockGuard g;
  g.mgr_ = mgr;
  g.stripes_ = std::move(stripes);
  g.shared_ = true;
  return g;
}

LockGuard::~LockGuard() {
  Release();
}

LockGuard::LockGuard(LockGuard&& other) noexcept
    : mgr_(other.mgr_), stripes_(std::move(other.stripes_)), shared_(other.shared_) {
  other.mgr_ = nullptr;
  other.stripes_.clear();
}

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
  if (this != &other) {
    Release();
    mgr_ = other.mgr_;
    stripes_ = std::move(other.stripes_);
    shared_ = other.shared_;
    other.mgr_ = nullptr;
    other.stripes_.clear();
  }
  return *this;
}

bool LockGuard::holds(size_t stripe) const {
  return std::binary_search(stripes_.begin(), stripes_.end(), stripe);
}

bool LockGuard::covers(const std::vector<size_t>& stripes) const {
  return mgr_ != nullptr &&
         std::includes(stripes_.begin(), stripes_.end(), stripes.begin(), stripes.end());
}

bool LockGuard::TryAdd(const std::vector<size_t>& stripes) {
  if (mgr_ == nullptr) {
    return false;
  }
  // The stripes taken go behind the held ones first (no allocation while the vector has room:
  // this runs for every command that joins an io thread's batch), then into their places.
  const size_t held = stripes_.size();
  for (size_t s : stripes) {
    if (std::binary_search(stripes_.begin(), stripes_.begin() + static_cast<ptrdiff_t>(held), s)) {
      continue;
    }
    const bool ok = shared_ ? mgr_->stripe(s).try_lock_shared() : mgr_->stripe(s).try_lock();
    if (!ok) {
      for (size_t i = held; i < stripes_.size(); ++i) {
        if (shared_) {
          mgr_->stripe(stripes_[i]).unlock_shared();
        } else {
          mgr_->stripe(stripes_[i]).unlock();
        }
      }
      stripes_.resize(held);
      return false;
    }
    stripes_.push_back(s);
  }
  // (The new ones are sorted among themselves: insertion keeps the whole list sorted.)
  for (size_t i = held; i < stripes_.size(); ++i) {
    const size_t s = stripes_[i];
    size_t j = i;
    for (; j > 0 && stripes_[j - 1] > s; --j) {
      stripes_[j] = stripes_[j - 1];
    }
    stripes_[j] = s;
  }
  return true;
}

void LockGuard::Release() {
  if (mgr_ != nullptr) {
    for (auto it = stripes_.rbegin(); it != stripes_.rend(); ++it) {
      if (shared_) {
        mgr_->stripe(*it).unlock_shared();
      } else {
        mgr_->stripe(*it).unlock();
      }
    }
  }
  stripes_.clear();
  mgr_ = nullptr;
}

}  // namespace cuckood::storage

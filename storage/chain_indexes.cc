// Chain indexes by page prefix (see chain_indexes.h).
#include "storage/chain_indexes.h"

#include "storage/format.h"

namespace cuckood::storage {

std::shared_ptr<core::ChainIndex> ChainIndexes::Find(std::string_view prefix) {
  std::lock_guard lock(mu_);
  auto it = by_prefix_.find(prefix);
  if (it == by_prefix_.end()) {
    return nullptr;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  Entry& e = *it->second;
  // (the caller's writes since it was last found may have grown it)
  const size_t now = e.index->memory();
  bytes_ = bytes_ - e.charged + now;
  e.charged = now;
  auto index = e.index;
  EvictLocked(&e);
  return index;
}

void ChainIndexes::Keep(std::string_view prefix, std::shared_ptr<core::ChainIndex> index,
                        uint64_t drops_before) {
  const size_t size = index->memory();
  builds_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  if (drops_.load(std::memory_order_acquire) != drops_before || size > budget_) {
    return;
  }
  if (auto it = by_prefix_.find(prefix); it != by_prefix_.end()) {
    EraseLocked(it->second);
  }
  lru_.push_front(Entry{std::string(prefix), std::move(index), size});
  by_prefix_.emplace(lru_.front().prefix, lru_.begin());
  bytes_ += size;
  EvictLocked(&lru_.front());
}

void ChainIndexes::Drop(std::string_view prefix) {
  std::lock_guard lock(mu_);
  drops_.fetch_add(1, std::memory_order_acq_rel);
  if (auto it = by_prefix_.find(prefix); it != by_prefix_.end()) {
    EraseLocked(it->second);
  }
}

void ChainIndexes::DropAll() {
  std::lock_guard lock(mu_);
  drops_.fetch_add(1, std::memory_order_acq_rel);
  by_prefix_.clear();
  lru_.clear();
  bytes_ = 0;
}

void ChainIndexes::OnCacheErase(std::string_view cache_key) {
  if (cache_key.empty()) {
    DropAll();
    return;
  }
  // Page keys: 'p' | page prefix | sub-filter and page number (PageCacheKey, EncodePageKey).
  if (cache_key.size() > 1 + kPageKeySuffix && cache_key[0] == 'p') {
    Drop(cache_key.substr(1, cache_key.size() - 1 - kPageKeySuffix));
  }
}

size_t ChainIndexes::count() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

size_t ChainIndexes::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

void ChainIndexes::EvictLocked(const Entry* keep) {
  while (bytes_ > budget_ && !lru_.empty() && &lru_.back() != keep) {
    EraseLocked(std::prev(lru_.end()));
  }
}

void ChainIndexes::EraseLocked(List::iterator it) {
  bytes_ -= it->charged;
  by_prefix_.erase(it->prefix);
  lru_.erase(it);
}

}  // namespace cuckood::storage

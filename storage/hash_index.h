// An index of values by string key for MemCache's shards: open addressing with linear probing
// over 16-byte slots that hold the key's hash next to the value (a list iterator, a pointer).
// A lookup reads one slot, compares the stored hash, and reads the value's key only when the
// hashes match; std::unordered_map took a bucket, the node before the wanted one, the node and
// the key's bytes, each usually a cache miss. Deletion shifts the following slots back (no
// tombstones), so probe sequences stay as short as the load allows (at most half full).
//
// Not thread-safe. KeyOf(value) returns the value's key as a string_view.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace cuckood::storage {

template <class V, class KeyOf>
class HashIndex {
 public:
  // The hash Find, Insert and Erase take (never 0: 0 marks an empty slot).
  static uint64_t Hash(std::string_view key) {
    return static_cast<uint64_t>(std::hash<std::string_view>{}(key)) | kUsed;
  }

  // The value stored under key, or nullptr.
  V* Find(uint64_t hash, std::string_view key) {
    if (size_ == 0) {
      return nullptr;
    }
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.hash == hash && KeyOf{}(s.value) == key) {
        return &s.value;
      }
      if (s.hash == 0) {
        return nullptr;
      }
    }
  }

  // Hints the CPU to load the slot a lookup of this hash starts at.
  void Prefetch(uint64_t hash) const {
    if (!slots_.empty()) {
      __builtin_prefetch(&slots_[hash & mask_]);
    }
  }

  // Prefetch without the index's lock (the slot array may be replaced meanwhile: the address is
  // only hinted to the CPU, never read).
  void PrefetchUnlocked(uint64_t hash) const {
    const Slot* base = base_.load(std::memory_order_relaxed);
    if (base != nullptr) {
      __builtin_prefetch(base + (hash & mask_unlocked_.load(std::memory_order_relaxed)));
    }
  }

  // Calls f(value) with the value in the slot a lookup of this hash starts at, if that slot
  // holds this hash (to prefetch what the value points at, once the slot itself is loaded).
  template <class F>
  void PeekHome(uint64_t hash, F&& f) const {
    if (!slots_.empty()) {
      const Slot& s = slots_[hash & mask_];
      if (s.hash == hash) {
        f(s.value);
      }
    }
  }

  // Adds a value whose key is not in the index.
  void Insert(uint64_t hash, V value) {
    if ((size_ + 1) * 2 > slots_.size()) {
      Grow();
    }
    Place(hash, std::move(value));
    ++size_;
  }

  // Removes key's value; false if it was not there.
  bool Erase(uint64_t hash, std::string_view key) {
    if (size_ == 0) {
      return false;
    }
    size_t i = hash & mask_;
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].hash == 0) {
        return false;
      }
      if (slots_[i].hash == hash && KeyOf{}(slots_[i].value) == key) {
        break;
      }
    }
    // Backward shift: each following slot of the run moves into the hole when the hole lies
    // between its home slot and where it is (it would not be found beyond the hole otherwise).
    for (size_t j = (i + 1) & mask_; slots_[j].hash != 0; j = (j + 1) & mask_) {
      const size_t home = slots_[j].hash & mask_;
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = std::move(slots_[j]);
        i = j;
      }
    }
    slots_[i] = Slot();
    --size_;
    return true;
  }

  void Clear() {
    for (Slot& s : slots_) {
      s = Slot();
    }
    size_ = 0;
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint64_t kUsed = uint64_t{1} << 63;
  struct Slot {
    uint64_t hash = 0;  // 0: empty
    V value{};
  };

  void Place(uint64_t hash, V value) {
    size_t i = hash & mask_;
    while (slots_[i].hash != 0) {
      i = (i + 1) & mask_;
    }
    slots_[i].hash = hash;
    slots_[i].value = std::move(value);
  }

  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.empty() ? 16 : old.size() * 2);
    mask_ = slots_.size() - 1;
    mask_unlocked_.store(mask_, std::memory_order_relaxed);
    base_.store(slots_.data(), std::memory_order_relaxed);
    for (Slot& s : old) {
      if (s.hash != 0) {
        Place(s.hash, std::move(s.value));
      }
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  // slots_.data() and mask_ for PrefetchUnlocked (a stale pair only hints a wrong address)
  std::atomic<const Slot*> base_{nullptr};
  std::atomic<size_t> mask_unlocked_{0};
};

}  // namespace cuckood::storage

// An in-memory BucketAccess for the core tests: sparse pages per sub-filter, created on first
// write, so multi-GiB filters cost only what is written. It also checks the accessor contract:
// Read() hands out copies that Checkpoint() poisons, so code that reads a stale pointer after a
// checkpoint (or after writing the same bucket) sees garbage; and it can inject storage errors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/filter.h"

namespace cuckood::core::testing {

class MemoryAccess : public BucketAccess {
 public:
  explicit MemoryAccess(uint16_t bucket_size, uint64_t page_buckets = 16)
      : bucket_size_(bucket_size), page_buckets_(page_buckets) {}

  const uint8_t* Read(uint32_t f, uint64_t b) override {
    if (Fail()) {
      return nullptr;
    }
    ++reads_;
    const uint8_t* src = Find(f, b);
    uint8_t* copy = ScratchAlloc();
    if (src == nullptr) {
      std::memset(copy, 0, bucket_size_);
    } else {
      std::memcpy(copy, src, bucket_size_);
    }
    return copy;
  }

  uint8_t* Write(uint32_t f, uint64_t b) override {
    if (Fail()) {
      return nullptr;
    }
    ++writes_;
    std::vector<uint8_t>& page = pages_[{f, b / page_buckets_}];
    if (page.empty()) {
      page.assign(page_buckets_ * bucket_size_, 0);
    }
    return page.data() + (b % page_buckets_) * bucket_size_;
  }

  uint64_t NextMaybeNonEmpty(uint32_t f, uint64_t b, uint64_t num_buckets) override {
    ++next_calls_;
    auto it = pages_.lower_bound({f, b / page_buckets_});
    if (it == pages_.end() || it->first.first != f) {
      return num_buckets;
    }
    const uint64_t first = it->first.second * page_buckets_;
    const uint64_t next = first > b ? first : b;
    return next < num_buckets ? next : num_buckets;
  }

  bool Checkpoint() override {
    ++checkpoints_;
    // Stale Read() pointers now show a bogus fingerprint. Older blocks were poisoned by the
    // previous checkpoints already.
    for (size_t k = poison_block_; k < scratch_.size(); ++k) {
      const uint64_t from = k == poison_block_ ? poison_offset_ : 0;
      const uint64_t to = k + 1 == scratch_.size() ? scratch_used_ : scratch_[k].size();
      if (from < to) {
        std::memset(scratch_[k].data() + from, 0xA5, to - from);
      }
    }
    if (!scratch_.empty()) {
      poison_block_ = scratch_.size() - 1;
      poison_offset_ = scratch_used_;
    }
    if (fail_checkpoint_) {
      return false;
    }
    return true;
  }

  // Frees Read() copies; call between operations (the "end of a command").
  void EndCommand() {
    scratch_.clear();
    poison_block_ = 0;
    poison_offset_ = 0;
    scratch_used_ = kScratchBlock;
  }

  // The next `ok_calls` Read/Write calls succeed, every later one fails. -1 = never fail.
  void FailAfter(int64_t ok_calls) { fail_after_ = ok_calls; }
  void FailCheckpoint(bool fail) { fail_checkpoint_ = fail; }

  // Raw bytes [offset, offset + length) of sub-filter f; unwritten bytes read as zero.
  std::string ReadBytes(uint32_t f, uint64_t offset, uint64_t length) const {
    std::string out(length, '\0');
    const uint64_t page_bytes = page_buckets_ * bucket_size_;
    for (auto it = pages_.lower_bound({f, offset / page_bytes});
         it != pages_.end() && it->first.first == f; ++it) {
      const uint64_t page_start = it->first.second * page_bytes;
      if (page_start >= offset + length) {
        break;
      }
      for (uint64_t i = 0; i < page_bytes; ++i) {
        const uint64_t pos = page_start + i;
        if (pos >= offset && pos < offset + length) {
          out[pos - offset] = static_cast<char>(it->second[i]);
        }
      }
    }
    return out;
  }

  // The written parts of [offset, offset + length) of sub-filter f, as (offset relative to
  // `offset`, bytes) pieces; everything else is zero. For copying huge sparse chunks cheaply.
  std::vector<std::pair<uint64_t, std::string>> ReadSparse(uint32_t f, uint64_t offset,
                                                           uint64_t length) const {
    std::vector<std::pair<uint64_t, std::string>> pieces;
    const uint64_t page_bytes = page_buckets_ * bucket_size_;
    for (auto it = pages_.lower_bound({f, offset / page_bytes});
         it != pages_.end() && it->first.first == f; ++it) {
      const uint64_t page_start = it->first.second * page_bytes;
      if (page_start >= offset + length) {
        break;
      }
      const uint64_t from = std::max(page_start, offset);
      const uint64_t to = std::min(page_start + page_bytes, offset + length);
      const auto* data = reinterpret_cast<const char*>(it->second.data());
      pieces.emplace_back(from - offset,
                          std::string(data + (from - page_start), data + (to - page_start)));
    }
    return pieces;
  }

  // Writes raw bytes into sub-filter f; all-zero stretches do not create pages (keeps copies of
  // huge, mostly empty filters sparse).
  void WriteBytes(uint32_t f, uint64_t offset, const std::string& data) {
    const uint64_t page_bytes = page_buckets_ * bucket_size_;
    uint64_t i = 0;
    while (i < data.size()) {
      const uint64_t pos = offset + i;
      const uint64_t in_page = pos % page_bytes;
      const uint64_t n = std::min<uint64_t>(page_bytes - in_page, data.size() - i);
      const char* src = data.data() + i;
      auto it = pages_.find({f, pos / page_bytes});
      if (it == pages_.end()) {
        if (std::all_of(src, src + n, [](char c) { return c == 0; })) {
          i += n;
          continue;
        }
        it =
            pages_.emplace(std::make_pair(f, pos / page_bytes), std::vector<uint8_t>(page_bytes, 0))
                .first;
      }
      std::memcpy(it->second.data() + in_page, src, n);
      i += n;
    }
  }

  uint8_t Slot(uint32_t f, uint64_t b, uint32_t s) const {
    const uint8_t* bucket = Find(f, b);
    return bucket == nullptr ? 0 : bucket[s];
  }
  void SetSlot(uint32_t f, uint64_t b, uint32_t s, uint8_t value) { Write(f, b)[s] = value; }

  // Non-zero slots in every page, including sub-filters beyond the current chain.
  uint64_t NonEmptySlots() const {
    uint64_t n = 0;
    for (const auto& [key, page] : pages_) {
      for (uint8_t v : page) {
        n += v != 0 ? 1 : 0;
      }
    }
    return n;
  }
  // Non-zero slots of sub-filter f.
  uint64_t NonEmptySlots(uint32_t f) const {
    uint64_t n = 0;
    for (const auto& [key, page] : pages_) {
      if (key.first == f) {
        for (uint8_t v : page) {
          n += v != 0 ? 1 : 0;
        }
      }
    }
    return n;
  }

  // The whole content, for "nothing changed" checks.
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint8_t>> Snapshot() const {
    auto copy = pages_;
    for (auto it = copy.begin(); it != copy.end();) {
      bool zero = true;
      for (uint8_t v : it->second) {
        zero = zero && v == 0;
      }
      it = zero ? copy.erase(it) : std::next(it);
    }
    return copy;
  }

  uint64_t reads() const { return reads_; }
  uint64_t writes() const { return writes_; }
  uint64_t checkpoints() const { return checkpoints_; }
  uint64_t next_calls() const { return next_calls_; }
  size_t pages() const { return pages_.size(); }

 private:
  const uint8_t* Find(uint32_t f, uint64_t b) const {
    auto it = pages_.find({f, b / page_buckets_});
    if (it == pages_.end()) {
      return nullptr;
    }
    return it->second.data() + (b % page_buckets_) * bucket_size_;
  }

  // Bump allocation of Read() copies; blocks never move, so earlier copies stay addressable.
  uint8_t* ScratchAlloc() {
    if (scratch_.empty() || scratch_used_ + bucket_size_ > scratch_.back().size()) {
      scratch_.emplace_back(std::max<uint64_t>(kScratchBlock, bucket_size_), 0);
      scratch_used_ = 0;
    }
    uint8_t* p = scratch_.back().data() + scratch_used_;
    scratch_used_ += bucket_size_;
    return p;
  }

  bool Fail() {
    if (fail_after_ < 0) {
      return false;
    }
    if (fail_after_ == 0) {
      return true;
    }
    --fail_after_;
    return false;
  }

  static constexpr uint64_t kScratchBlock = 1 << 16;

  uint64_t bucket_size_;
  uint64_t page_buckets_;
  uint64_t scratch_used_ = kScratchBlock;
  size_t poison_block_ = 0;  // Read() copies before this point are poisoned already
  uint64_t poison_offset_ = 0;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint8_t>> pages_;
  std::deque<std::vector<uint8_t>> scratch_;
  int64_t fail_after_ = -1;
  bool fail_checkpoint_ = false;
  uint64_t reads_ = 0;
  uint64_t writes_ = 0;
  uint64_t checkpoints_ = 0;
  uint64_t next_calls_ = 0;
};

// A filter under test: metadata plus its storage.
struct TestFilter {
  FilterMeta meta;
  MemoryAccess access;
  Limits limits;

  explicit TestFilter(const FilterMeta& m, uint64_t page_buckets = 16)
      : meta(m), access(m.bucket_size, page_buckets) {}

  // Like CF.RESERVE with the RedisBloom sizing policy.
  static FilterMeta Reserve(uint64_t capacity, uint16_t bucket_size = 2,
                            uint16_t max_iterations = 20, uint16_t expansion = 1) {
    FilterMeta m;
    m.bucket_size = bucket_size;
    m.max_iterations = max_iterations;
    m.expansion = NormaliseExpansion(expansion);
    m.base_num_buckets = BaseBuckets(capacity, bucket_size, SizingPolicy::kRedisBloom, Limits{});
    return m;
  }

  InsertResult Add(std::string_view item, bool nx = false) {
    InsertResult r = Insert(meta, access, HashItem(item), nx, limits);
    access.EndCommand();
    return r;
  }
  DeleteResult Del(std::string_view item) {
    DeleteResult r = Delete(meta, access, HashItem(item));
    access.EndCommand();
    return r;
  }
  bool Has(std::string_view item) {
    bool io_error = true;
    bool r = Exists(meta, access, HashItem(item), &io_error);
    access.EndCommand();
    return r && !io_error;
  }
  uint64_t CountOf(std::string_view item) {
    bool io_error = true;
    uint64_t r = Count(meta, access, HashItem(item), &io_error);
    access.EndCommand();
    return io_error ? UINT64_MAX : r;
  }
  bool CompactAll(bool stop_on_stuck = false) {
    bool r = Compact(meta, access, stop_on_stuck);
    access.EndCommand();
    return r;
  }
};

// An 8-byte little-endian integer as an item (RedisBloom's unit tests hash integers this way).
inline std::string IntItem(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) {
    s[static_cast<size_t>(i)] = static_cast<char>(static_cast<uint8_t>(v >> (8 * i)));
  }
  return s;
}

}  // namespace cuckood::core::testing

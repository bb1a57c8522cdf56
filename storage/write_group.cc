#include "storage/write_group.h"

#include <algorithm>
#include <bit>

#include "storage/buffer_pool.h"
#include "storage/page_merge.h"

namespace cuckood::storage {

bool AddPageWrite(rocksdb::WriteBatch* batch, rocksdb::ColumnFamilyHandle* cf, std::string_view key,
                  const std::string* before, const std::string* after, bool whole,
                  std::string* scratch) {
  if (after == nullptr || AllZeroBytes(*after)) {
    if (!whole && (before == nullptr || AllZeroBytes(*before))) {
      return false;  // was not stored and still is not
    }
    (void)batch->Delete(cf, key);
    return true;
  }
  if (!whole && before != nullptr) {
    // One pass over the two pages finds the changed bytes, or none.
    std::string local;
    std::string* operand = scratch != nullptr ? scratch : &local;
    if (EncodePageDelta(*before, *after, operand)) {
      if (PageDeltaIsEmpty(*operand)) {
        return false;  // unchanged (e.g. a kick-out chain that was rolled back)
      }
      (void)batch->Merge(cf, key, *operand);
      return true;
    }
  }
  (void)batch->Put(cf, key, *after);
  return true;
}

WriteGroup::WriteGroup(Engine* engine, MemCache* mem)
    : engine_(engine), mem_(mem), generation_(engine->generation()) {}

WriteGroup::~WriteGroup() {
  if (pending_.ticket != 0) {         // sealed and queued, not yet waited for
    (void)engine_->Await(&pending_);  // (the writing thread must be done with it)
    if (pending_.status.ok()) {
      ClearCommitted();
    }
  }
  Abandon();
}

uint32_t WriteGroup::PointerMap::find(const void* p) const {
  if (slots_.empty()) {
    return kNone;
  }
  const auto key = reinterpret_cast<uintptr_t>(p);
  const size_t mask = slots_.size() - 1;
  for (size_t i = Slot(key);; i = (i + 1) & mask) {
    if (slots_[i].first == key) {
      return slots_[i].second;
    }
    if (slots_[i].first == kEmpty) {
      return kNone;
    }
  }
}

void WriteGroup::PointerMap::insert(const void* p, uint32_t change) {
  if ((used_ + 1) * 2 > slots_.size()) {
    Grow();
  }
  const auto key = reinterpret_cast<uintptr_t>(p);
  const size_t mask = slots_.size() - 1;
  size_t reuse = SIZE_MAX;
  for (size_t i = Slot(key);; i = (i + 1) & mask) {
    if (slots_[i].first == key) {
      slots_[i].second = change;
      return;
    }
    if (slots_[i].first == kErased && reuse == SIZE_MAX) {
      reuse = i;
    }
    if (slots_[i].first == kEmpty) {
      if (reuse == SIZE_MAX) {
        reuse = i;
        ++used_;
      }
      slots_[reuse] = {key, change};
      return;
    }
  }
}

void WriteGroup::PointerMap::erase(const void* p) {
  if (slots_.empty()) {
    return;
  }
  const auto key = reinterpret_cast<uintptr_t>(p);
  const size_t mask = slots_.size() - 1;
  for (size_t i = Slot(key);; i = (i + 1) & mask) {
    if (slots_[i].first == key) {
      slots_[i] = {kErased, kNone};
      return;
    }
    if (slots_[i].first == kEmpty) {
      return;
    }
  }
}

void WriteGroup::PointerMap::clear() {
  if (used_ > 0) {
    std::fill(slots_.begin(), slots_.end(), std::pair<uintptr_t, uint32_t>(kEmpty, kNone));
    used_ = 0;
  }
}

void WriteGroup::PointerMap::Grow() {
  std::vector<std::pair<uintptr_t, uint32_t>> old;
  old.swap(slots_);
  size_t live = 0;
  for (const auto& v : old) {
    live += v.first > kErased ? 1 : 0;
  }
  size_t size = 64;
  while (size < (live + 1) * 4) {
    size *= 2;
  }
  slots_.assign(size, {kEmpty, kNone});
  shift_ = 64 - static_cast<unsigned>(std::countr_zero(size));
  used_ = 0;
  for (const auto& v : old) {
    if (v.first > kErased) {
      insert(reinterpret_cast<const void*>(v.first), v.second);
    }
  }
}

uint32_t WriteGroup::KeyTable::Find(std::string_view key) const {
  if (used_ == 0) {
    return kNone;
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
    const uint32_t at = slots_[i];
    if (at == 0) {
      return kNone;
    }
    if (keys_[at - 1] == key) {
      return at - 1;
    }
  }
}

uint32_t WriteGroup::KeyTable::Add(std::string_view key, bool* fresh) {
  if ((used_ + 1) * 2 > slots_.size()) {
    Grow();
  }
  const size_t mask = slots_.size() - 1;
  size_t i = Hash(key) & mask;
  for (;; i = (i + 1) & mask) {
    const uint32_t at = slots_[i];
    if (at == 0) {
      break;
    }
    if (keys_[at - 1] == key) {
      *fresh = false;
      return at - 1;
    }
  }
  if (used_ < keys_.size()) {
    keys_[used_].assign(key);  // (into the buffer of an earlier group's key)
  } else {
    keys_.emplace_back(key);
  }
  slots_[i] = static_cast<uint32_t>(++used_);
  *fresh = true;
  return static_cast<uint32_t>(used_ - 1);
}

void WriteGroup::KeyTable::Grow() {
  size_t size = 64;
  while (size < (used_ + 1) * 4) {
    size *= 2;
  }
  slots_.assign(size, 0);
  const size_t mask = size - 1;
  for (size_t k = 0; k < used_; ++k) {
    size_t i = Hash(keys_[k]) & mask;
    while (slots_[i] != 0) {
      i = (i + 1) & mask;
    }
    slots_[i] = static_cast<uint32_t>(k + 1);
  }
}

void WriteGroup::KeyTable::Clear() {
  if (used_ > 0) {
    std::fill(slots_.begin(), slots_.end(), 0);
    used_ = 0;
  }
}

void WriteGroup::KeyTable::Trim(size_t keep) {
  Clear();
  if (keys_.size() > keep) {
    keys_.resize(keep);
    keys_.shrink_to_fit();
  }
  if (slots_.size() > keep * 4) {
    std::vector<uint32_t>().swap(slots_);
  }
}

WriteGroup::Change& WriteGroup::ChangeOf(std::string_view cache_key, bool* fresh, uint32_t* index) {
  *index = keys_.Add(cache_key, fresh);
  if (*fresh) {
    if (*index < changes_.size()) {
      changes_[*index] = Change();
    } else {
      changes_.emplace_back();
    }
  }
  return changes_[*index];
}

bool WriteGroup::Lookup(std::string_view cache_key, MemCache::Value* value) const {
  if (sealed_) {
    // (Not asked while sealed: no command runs in a sealed group. Its pages' values are let
    // go of at Seal, so the answer would be wrong; the cache and RocksDB, which settles the
    // queued write first, answer instead.)
    return false;
  }
  const uint32_t i = keys_.Find(cache_key);
  if (i == kNone) {
    return false;
  }
  *value = changes_[i].after;
  return true;
}

void WriteGroup::AddPage(std::string_view page_prefix, std::string_view cache_key,
                         MemCache::Value before, MemCache::Value after, bool whole,
                         const std::span<const PageRange>* written) {
  bool fresh = false;
  (void)prefixes_.Add(page_prefix, &fresh);
  mem_->Put(cache_key, after);
  uint32_t index = 0;
  Change& c = ChangeOf(cache_key, &fresh, &index);
  if (fresh) {
    c.page = true;
    c.whole = whole;
    c.before = std::move(before);  // (kept for its buffer's reuse: ClearCommitted)
    if (written != nullptr && !whole) {
      c.ranged = true;
      for (const PageRange& r : *written) {
        AddRange(index, r);
      }
    }
  } else {
    // (Keeps the state from before the group. A page changed in place before has no bytes from
    // before the group, and its ranges do not cover this change: it is written whole.)
    c.whole = c.whole || whole || c.ranged;
    owned_.erase(c.after.get());
  }
  c.after = std::move(after);
  if (c.after) {
    owned_.insert(c.after.get(), index);
  }
}

void WriteGroup::AddPageInPlace(std::string_view page_prefix, std::string_view cache_key,
                                MemCache::Value value, std::span<const PageRange> ranges) {
  bool fresh = false;
  (void)prefixes_.Add(page_prefix, &fresh);
  mem_->Put(cache_key, value);  // (the same value: counts as the key's write, see MemCache)
  uint32_t index = 0;
  Change& c = ChangeOf(cache_key, &fresh, &index);
  if (fresh) {
    c.page = true;
    c.ranged = true;
  } else {
    // (Not expected: the group's value of a page is its own, changed as such.)
    c.whole = true;
    owned_.erase(c.after.get());
  }
  for (const PageRange& r : ranges) {
    AddRange(index, r);
  }
  c.after = std::move(value);
  owned_.insert(c.after.get(), index);
}

void WriteGroup::AddRanges(const std::string* value, std::span<const PageRange> ranges) {
  if (sealed_) {
    return;
  }
  if (const uint32_t i = owned_.find(value); i != kNone && changes_[i].ranged) {
    for (const PageRange& r : ranges) {
      AddRange(i, r);
    }
  }
}

void WriteGroup::AddMeta(std::string_view cache_key, MemCache::Value value) {
  mem_->Put(cache_key, value);
  bool fresh = false;
  uint32_t index = 0;
  ChangeOf(cache_key, &fresh, &index).after = std::move(value);
}

void WriteGroup::Fail(const Status& s) {
  if (failed_.ok()) {
    failed_ = s;
  }
  Abandon();
}

void WriteGroup::AddRange(uint32_t change, const PageRange& r) {
  uint32_t& last = changes_[change].last_range;
  ranges_.push_back({r, last});
  last = static_cast<uint32_t>(ranges_.size() - 1);
}

std::span<PageRange> WriteGroup::RangesOf(uint32_t change) {
  ranges_scratch_.clear();
  for (uint32_t i = changes_[change].last_range; i != kNone; i = ranges_[i].prev) {
    ranges_scratch_.push_back(ranges_[i].range);
  }
  return ranges_scratch_;
}

void WriteGroup::Seal() {
  if (sealed_) {
    return;
  }
  sealed_ = true;
  owned_.clear();  // (the values are encoded into the write below: no longer changed in place)
  pending_ = Engine::PendingWrite();
  if (!failed_.ok() || empty()) {
    return;
  }
  // In the order the changes were made, or in key order when that makes the memtable's inserts
  // cheaper (Engine::ordered_writes).
  const bool in_key_order = engine_->ordered_writes();
  if (in_key_order) {
    ordered_.resize(keys_.size());
    for (uint32_t i = 0; i < ordered_.size(); ++i) {
      ordered_[i] = i;
    }
    std::sort(ordered_.begin(), ordered_.end(),
              [this](uint32_t a, uint32_t b) { return keys_.key(a) < keys_.key(b); });
  }
  batch_.Clear();
  size_t writes = 0;
  for (uint32_t n = 0; n < keys_.size(); ++n) {
    const uint32_t i = in_key_order ? ordered_[n] : n;
    const std::string& ck = keys_.key(i);
    const Change& c = changes_[i];
    const std::string_view key = std::string_view(ck).substr(1);
    if (c.page && c.ranged && !c.whole) {
      // (The page was stored: the cache held its bytes.)
      const std::span<PageRange> ranges = RangesOf(i);
      if (!c.after || AllZeroBytes(*c.after, ranges)) {
        (void)batch_.Delete(engine_->pages_cf(), key);
      } else if (EncodePageRanges(*c.after, ranges, &operand_)) {
        (void)batch_.Merge(engine_->pages_cf(), key, operand_);
      } else {
        (void)batch_.Put(engine_->pages_cf(), key, *c.after);
      }
      ++writes;
    } else if (c.page) {
      writes += AddPageWrite(&batch_, engine_->pages_cf(), key, c.before.get(), c.after.get(),
                             c.whole, &operand_)
                    ? 1
                    : 0;
    } else if (c.after) {
      (void)batch_.Put(engine_->metadata_cf(), key, *c.after);
      ++writes;
    } else {
      (void)batch_.Delete(engine_->metadata_cf(), key);
      ++writes;
    }
  }
  // The batch holds the pages' bytes now: the group lets go of its references to their
  // newest values, which the in-memory cache keeps. The next writer of such a page (another
  // io thread's group, once this one's stripes are released) then finds it held by the cache
  // alone and changes it in place instead of copying it (PageCache::Install).
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    if (changes_[i].page) {
      changes_[i].after.reset();
    }
  }
  if (writes == 0) {
    return;
  }
  pending_.batch = &batch_;
  pending_.on_fail = &WriteGroup::OnWriteFailed;
  pending_.arg = this;
  pending_.marked = true;
  engine_->Submit(&pending_, generation_);
  if (pending_.ticket == 0) {
    failed_ = pending_.status;
    Abandon();
    return;
  }
  // (The stripes of these keys are still held: a reader of one of them sees its mark.)
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    engine_->MarkPending(std::string_view(keys_.key(i)).substr(1), pending_.ticket);
  }
}

void WriteGroup::OnWriteFailed(void* group) {
  // (On the writing thread, while the group's own thread waits in Commit: the group's values
  // leave the cache before any write that could read them starts.)
  static_cast<WriteGroup*>(group)->EraseFromCache();
}

void WriteGroup::EraseFromCache() const {
  // The cache holds the group's values: readers must find RocksDB's again.
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    mem_->Erase(keys_.key(i));
  }
}

Status WriteGroup::Commit() {
  Seal();
  sealed_ = false;
  // (Nothing submitted: Await answers the empty status at once.)
  Status s = failed_.ok() ? engine_->Await(&pending_) : failed_;
  pending_ = Engine::PendingWrite();
  if (!s.ok()) {
    failed_ = s;
    Abandon();
    return s;
  }
  ClearCommitted();
  prefixes_.Clear();
  generation_ = engine_->generation();
  return Status::Ok();
}

void WriteGroup::Reuse(Engine* engine, MemCache* mem) {
  engine_ = engine;
  mem_ = mem;
  // (Bounds of what an idle group keeps: a single-item write adds ~100 bytes to the batch and
  // two changes.)
  constexpr size_t kKeepBatchBytes = 1 << 20;
  constexpr size_t kKeepChanges = 4096;
  if (batch_.GetDataSize() > kKeepBatchBytes) {
    batch_ = rocksdb::WriteBatch();
  } else {
    batch_.Clear();
  }
  keys_.Trim(kKeepChanges);
  prefixes_.Trim(kKeepChanges);
  if (changes_.size() > kKeepChanges) {
    changes_.resize(kKeepChanges);
    changes_.shrink_to_fit();
  }
  if (ordered_.capacity() > kKeepChanges) {
    decltype(ordered_)().swap(ordered_);
  }
  if (ranges_.capacity() > kKeepChanges * 4) {
    decltype(ranges_)().swap(ranges_);
  }
  if (operand_.capacity() > kKeepBatchBytes) {
    std::string().swap(operand_);
  }
  owned_.clear();
  generation_ = engine_->generation();
}

void WriteGroup::ClearCommitted() {
  // The pages' bytes from before the group are mostly held by nobody else now (the cache holds
  // the new ones): their buffers serve the next pages read or copied on this thread.
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    RecycleValue(std::move(changes_[i].before));
    RecycleValue(std::move(changes_[i].after));
  }
  keys_.Clear();
  ranges_.clear();
}

void WriteGroup::Abandon() {
  EraseFromCache();
  for (uint32_t i = 0; i < keys_.size(); ++i) {
    changes_[i] = Change();  // (the values are let go of now)
  }
  keys_.Clear();
  ranges_.clear();
  prefixes_.Clear();
  owned_.clear();
}

}  // namespace cuckood::storage

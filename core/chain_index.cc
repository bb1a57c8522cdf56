// The index of a long chain of equal sub-filters (see chain_index.h).
#include "core/chain_index.h"

#include <algorithm>
#include <cstring>

namespace cuckood::core {

bool ChainIndex::Suits(const FilterMeta& meta) {
  return meta.expansion == 1 && meta.num_filters >= kMinFilters && meta.bucket_size != 0 &&
         meta.base_num_buckets != 0 && meta.base_num_buckets <= kMaxBuckets &&
         meta.num_filters * meta.base_num_buckets <= kMaxChainBuckets;
}

bool ChainIndex::Build(const FilterMeta& meta, BucketAccess& access) {
  *this = ChainIndex();
  if (!Suits(meta)) {
    return false;
  }
  const uint64_t n = meta.base_num_buckets;
  const uint32_t bs = meta.bucket_size;
  std::vector<uint32_t> counts(n * 256, 0);
  std::vector<std::vector<uint32_t>> room(n);
  for (uint32_t f = 0; f < meta.num_filters; ++f) {
    for (uint64_t b = 0; b < n; ++b) {
      const uint8_t* bucket = access.Read(f, b);
      if (bucket == nullptr) {
        return false;
      }
      bool has_room = false;
      for (uint32_t s = 0; s < bs; ++s) {
        if (bucket[s] == 0) {
          has_room = true;
        } else {
          ++counts[b * 256 + bucket[s]];
        }
      }
      if (has_room) {
        room[b].push_back(f);
      }
    }
  }
  num_buckets_ = n;
  bucket_size_ = meta.bucket_size;
  num_filters_ = meta.num_filters;
  counts_ = std::move(counts);
  room_ = std::move(room);
  memory_ = counts_.size() * sizeof(uint32_t) + room_.size() * sizeof(room_[0]);
  for (const auto& r : room_) {
    memory_ += r.capacity() * sizeof(uint32_t);
  }
  return true;
}

uint32_t ChainIndex::NewestWithRoom(uint64_t b0, uint64_t b1) const {
  const auto& r0 = room_[b0];
  const auto& r1 = room_[b1];
  const uint32_t f0 = r0.empty() ? kNone : r0.back();
  const uint32_t f1 = r1.empty() ? kNone : r1.back();
  if (f0 == kNone) {
    return f1;
  }
  if (f1 == kNone) {
    return f0;
  }
  return std::max(f0, f1);
}

void ChainIndex::AddRoom(uint64_t b, uint32_t f) {
  auto& r = room_[b];
  const size_t cap = r.capacity();
  if (r.empty() || r.back() < f) {
    r.push_back(f);  // (the usual case: the newest sub-filter)
  } else {
    auto it = std::lower_bound(r.begin(), r.end(), f);
    if (it == r.end() || *it != f) {
      r.insert(it, f);
    }
  }
  memory_ += (r.capacity() - cap) * sizeof(uint32_t);
}

void ChainIndex::RemoveRoom(uint64_t b, uint32_t f) {
  auto& r = room_[b];
  if (!r.empty() && r.back() == f) {
    r.pop_back();
    return;
  }
  auto it = std::lower_bound(r.begin(), r.end(), f);
  if (it != r.end() && *it == f) {
    r.erase(it);
  }
}

void ChainIndex::Grow(uint32_t num_filters) {
  for (uint32_t f = num_filters_; f < num_filters; ++f) {
    for (uint64_t b = 0; b < num_buckets_; ++b) {
      AddRoom(b, f);
    }
  }
  num_filters_ = std::max(num_filters_, num_filters);
}

void ChainIndex::Change(uint32_t f, uint64_t b, const uint8_t* before, const uint8_t* after) {
  bool room_before = false;
  bool room_after = false;
  uint32_t* counts = &counts_[b * 256];
  for (uint32_t s = 0; s < bucket_size_; ++s) {
    if (before[s] == after[s]) {
      room_before |= before[s] == 0;
      room_after |= after[s] == 0;
      continue;
    }
    if (before[s] == 0) {
      room_before = true;
    } else {
      --counts[before[s]];
    }
    if (after[s] == 0) {
      room_after = true;
    } else {
      ++counts[after[s]];
    }
  }
  if (room_before != room_after) {
    if (room_after) {
      AddRoom(b, f);
    } else {
      RemoveRoom(b, f);
    }
  }
}

uint8_t* IndexedAccess::Write(uint32_t f, uint64_t b) {
  const bool seen = std::any_of(written_.begin(), written_.end(),
                                [&](const Written& w) { return w.f == f && w.b == b; });
  if (!seen && !broken_) {
    const uint8_t* bucket = inner_.Read(f, b);
    if (bucket == nullptr) {
      return nullptr;
    }
    const size_t at = before_.size();
    before_.insert(before_.end(), bucket, bucket + index_.bucket_size());
    written_.push_back(Written{f, b, at});
  }
  return inner_.Write(f, b);
}

ChainIndex* IndexedAccess::Index(const FilterMeta& meta) {
  if (broken_ || !index_.Matches(meta)) {
    return nullptr;
  }
  if (meta.num_filters > index_.num_filters()) {
    index_.Grow(meta.num_filters);
  }
  return &index_;
}

bool IndexedAccess::Settle(const FilterMeta& meta) {
  if (!broken_ && index_.Matches(meta)) {
    index_.Grow(meta.num_filters);
    for (const auto& w : written_) {
      const uint8_t* after = inner_.Read(w.f, w.b);
      if (after == nullptr) {
        broken_ = true;
        break;
      }
      index_.Change(w.f, w.b, before_.data() + w.at, after);
    }
  } else {
    broken_ = true;
  }
  written_.clear();
  before_.clear();
  return !broken_;
}

}  // namespace cuckood::core

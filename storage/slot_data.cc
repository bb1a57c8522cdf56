#include "storage/slot_data.h"

#include "storage/engine.h"
#include "storage/format.h"

namespace cuckood::storage {
namespace {

uint16_t GetU16(std::string_view s, size_t at) {
  return static_cast<uint16_t>((static_cast<uint8_t>(s[at]) << 8) |
                               static_cast<uint8_t>(s[at + 1]));
}

std::string NsSlotKey(uint32_t ns, uint32_t slot) {
  std::string k(4, '\0');
  k[0] = static_cast<char>(ns >> 8);
  k[1] = static_cast<char>(ns);
  k[2] = static_cast<char>(slot >> 8);
  k[3] = static_cast<char>(slot);
  return k;
}

class Filter final : public rocksdb::WriteBatch::Handler {
 public:
  Filter(Engine* engine, SlotSpan span, rocksdb::WriteBatch* out)
      : engine_(engine), span_(span), out_(out) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    ++seen;
    if (Keep(cf, k)) {
      return out_->Put(Handle(cf), k, v);
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
    ++seen;
    if (Keep(cf, k)) {
      return out_->Delete(Handle(cf), k);
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
    ++seen;
    if (Keep(cf, k)) {
      return out_->SingleDelete(Handle(cf), k);
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    ++seen;
    if (Keep(cf, k)) {
      return out_->Merge(Handle(cf), k, v);
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice& b,
                                const rocksdb::Slice& e) override {
    ++seen;
    // The range delete of other slots in one namespace (an earlier migration's clean-up) does
    // not concern span; anything else (FLUSHDB) cannot be split.
    if (b.size() == 4 && e.size() == 4 && b[0] == e[0] && b[1] == e[1]) {
      const uint32_t from = GetU16(std::string_view(b.data(), 4), 2);
      const uint32_t to = GetU16(std::string_view(e.data(), 4), 2);  // exclusive
      if (to <= span_.first || from > span_.last) {
        return rocksdb::Status::OK();
      }
    }
    range_delete = true;
    return rocksdb::Status::OK();
  }
  void LogData(const rocksdb::Slice&) override {}

  bool range_delete = false;
  size_t seen = 0;

 private:
  rocksdb::ColumnFamilyHandle* Handle(uint32_t cf) {
    if (cf == engine_->metadata_cf()->GetID()) {
      return engine_->metadata_cf();
    }
    if (cf == engine_->pages_cf()->GetID()) {
      return engine_->pages_cf();
    }
    return engine_->default_cf();
  }
  bool Keep(uint32_t cf, const rocksdb::Slice& k) {
    RawCf kind = RawCf::kDefault;
    if (cf == engine_->metadata_cf()->GetID()) {
      kind = RawCf::kMetadata;
    } else if (cf == engine_->pages_cf()->GetID()) {
      kind = RawCf::kPages;
    } else if (cf != engine_->default_cf()->GetID()) {
      return false;
    }
    const auto slot = RawKeySlot(kind, std::string_view(k.data(), k.size()));
    return slot && span_.Contains(*slot);
  }

  Engine* engine_;
  SlotSpan span_;
  rocksdb::WriteBatch* out_;
};

}  // namespace

std::optional<uint16_t> RawKeySlot(RawCf cf, std::string_view key) {
  if (cf == RawCf::kDefault) {
    // 'A' | ns (2) | owner length (4, BE) | owner | version (8)
    if (key.size() < 7 + 8 || key[0] != kAliasPrefix) {
      return std::nullopt;
    }
    const uint32_t len = (static_cast<uint32_t>(static_cast<uint8_t>(key[3])) << 24) |
                         (static_cast<uint32_t>(static_cast<uint8_t>(key[4])) << 16) |
                         (static_cast<uint32_t>(static_cast<uint8_t>(key[5])) << 8) |
                         static_cast<uint32_t>(static_cast<uint8_t>(key[6]));
    if (key.size() != 7 + static_cast<size_t>(len) + 8) {
      return std::nullopt;
    }
    return KeySlot(key.substr(7, len));
  }
  if (key.size() < 4) {
    return std::nullopt;
  }
  return GetU16(key, 2);
}

Status FilterBatchBySlots(Engine* engine, const rocksdb::WriteBatch& in, SlotSpan span,
                          rocksdb::WriteBatch* out, size_t* seen) {
  Filter filter(engine, span, out);
  auto rs = in.Iterate(&filter);
  if (seen != nullptr) {
    *seen = filter.seen;
  }
  if (!rs.ok()) {
    return {Code::kCorruption, "malformed write batch: " + rs.ToString()};
  }
  if (filter.range_delete) {
    return {Code::kInvalid, "a range delete cannot be split by slot"};
  }
  return Status::Ok();
}

SlotScanner::SlotScanner(Engine* engine, const rocksdb::Snapshot* snapshot, SlotSpan span)
    : engine_(engine), snapshot_(snapshot), span_(span) {
  StartPhase();
}

SlotScanner::~SlotScanner() = default;

void SlotScanner::StartPhase() {
  it_.reset();
  if (phase_ >= 3) {
    return;
  }
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot_;
  ro.fill_cache = false;
  rocksdb::ColumnFamilyHandle* cf = phase_ == 0   ? engine_->metadata_cf()
                                    : phase_ == 1 ? engine_->pages_cf()
                                                  : engine_->default_cf();
  it_.reset(engine_->db()->NewIterator(ro, cf));
  if (phase_ == 2) {
    it_->Seek(std::string(1, kAliasPrefix));
  } else {
    it_->Seek(NsSlotKey(0, span_.first));
  }
}

bool SlotScanner::Advance() {
  while (it_->Valid()) {
    const std::string_view key(it_->key().data(), it_->key().size());
    if (phase_ == 2) {
      if (key.empty() || key[0] != kAliasPrefix) {
        return false;
      }
      const auto slot = RawKeySlot(RawCf::kDefault, key);
      if (slot && span_.Contains(*slot)) {
        return true;
      }
      it_->Next();
      continue;
    }
    if (key.size() < 4) {
      it_->Next();
      continue;
    }
    const uint32_t ns = GetU16(key, 0);
    const uint16_t slot = GetU16(key, 2);
    if (span_.Contains(slot)) {
      return true;
    }
    // Skip to the span in this namespace, or to the next namespace.
    if (slot < span_.first) {
      it_->Seek(NsSlotKey(ns, span_.first));
    } else if (ns < 0xFFFF) {
      it_->Seek(NsSlotKey(ns + 1, span_.first));
    } else {
      return false;
    }
  }
  return false;
}

bool SlotScanner::Next(rocksdb::WriteBatch* out, size_t max_bytes, size_t* keys, Status* status) {
  out->Clear();
  *keys = 0;
  *status = Status::Ok();
  while (phase_ < 3) {
    rocksdb::ColumnFamilyHandle* cf = phase_ == 0   ? engine_->metadata_cf()
                                      : phase_ == 1 ? engine_->pages_cf()
                                                    : engine_->default_cf();
    while (Advance()) {
      out->Put(cf, it_->key(), it_->value());
      ++*keys;
      it_->Next();
      if (out->GetDataSize() >= max_bytes) {
        return true;
      }
    }
    if (!it_->status().ok()) {
      *status = Engine::FromRocks(it_->status());
      return false;
    }
    ++phase_;
    StartPhase();
  }
  return *keys > 0;
}

}  // namespace cuckood::storage

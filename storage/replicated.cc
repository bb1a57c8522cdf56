// A replica's writes: the primary's write batches applied unchanged (Db::ApplyReplicated), and
// the switch to another database after a full sync (Db::SwapEngine).
//
// Nothing on a replica writes through the command path, so the in-memory cache learns about
// applied batches here: every key a batch touches is erased from it while the stripes of the
// keys' owners are held exclusively (readers hold them shared), so a reader sees either every
// change of a batch or none, and a reader that filled the cache from RocksDB before the write is
// refused by the cache's write counters (MemCache::Fill).
//
// A filter that the primary writes in several batches (RESTORE, COPY, MOVE) sends its pages
// before its metadata, under a version the primary pins from its compaction filter; the replica
// pins it too, from the first batch of pages that no metadata names until the batch that writes
// the metadata (a write abandoned on the primary leaves its pages pinned here until a restart).
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <map>
#include <set>

#include "storage/db.h"
#include "storage/format.h"
#include "storage/slot_data.h"

namespace cuckood::storage {
namespace {

// Collects the cache keys and key stripes a batch touches.
class TouchedKeys final : public rocksdb::WriteBatch::Handler {
 public:
  TouchedKeys(Engine* engine, const Db* db, LockManager* locks)
      : engine_(engine), db_(db), locks_(locks) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key,
                        const rocksdb::Slice& value) override {
    Touch(cf, key);
    if (cf == engine_->metadata_cf()->GetID()) {
      auto meta = DecodeMetadata(std::string_view(value.data(), value.size()));
      if (meta && meta->type == KeyType::kCuckoo) {
        meta_versions.insert(meta->version);
      }
    } else if (cf == engine_->pages_cf()->GetID()) {
      PageKeyParts parts;
      if (DecodePageKey(std::string_view(key.data(), key.size()), &parts) &&
          !page_versions.count(parts.version)) {
        page_versions.emplace(parts.version, std::make_pair(parts.ns, std::string(parts.owner)));
      }
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    Touch(cf, key);
    return rocksdb::Status::OK();
  }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    Touch(cf, key);
    return rocksdb::Status::OK();
  }
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& key, const rocksdb::Slice&) override {
    Touch(cf, key);
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice&, const rocksdb::Slice&) override {
    everything = true;  // FLUSHDB / FLUSHALL
    return rocksdb::Status::OK();
  }
  void LogData(const rocksdb::Slice&) override {}

  bool everything = false;
  bool database_map = false;  // a SWAPDB: the map is read again, with every stripe held
  // Filter versions whose metadata the batch writes, and versions of the pages it writes (with
  // the namespace and owner key of their metadata).
  std::set<uint64_t> meta_versions;
  std::map<uint64_t, std::pair<uint16_t, std::string>> page_versions;
  std::vector<std::string> cache_keys;
  std::vector<size_t> stripes;

 private:
  void Touch(uint32_t cf, const rocksdb::Slice& raw) {
    const std::string_view key(raw.data(), raw.size());
    if (cf == engine_->metadata_cf()->GetID()) {
      uint16_t ns = 0;
      std::string_view user;
      if (!DecodeMetaKey(key, &ns, &user)) {
        everything = true;
        return;
      }
      // (Stripes are taken per database, as the command path takes them.)
      stripes.push_back(locks_->StripeOf(db_->DbOfNamespace(ns), user));
      cache_keys.push_back(MetaCacheKey(key));
    } else if (cf == engine_->pages_cf()->GetID()) {
      PageKeyParts parts;
      if (!DecodePageKey(key, &parts)) {
        everything = true;
        return;
      }
      // (Pages of a renamed filter stay under their first name: the batch also writes the
      // metadata of the name it has now, whose stripe the readers take.)
      stripes.push_back(locks_->StripeOf(db_->DbOfNamespace(parts.ns), parts.owner));
      cache_keys.push_back(PageCacheKey(key));
    } else if (key == kDbMapKey) {
      database_map = true;
      everything = true;
    }
    // The rest of the default column family (the version high-water mark, rename aliases) is
    // not in the cache.
  }

  Engine* engine_;
  const Db* db_;
  LockManager* locks_;
};

}  // namespace

Status Db::ApplyReplicated(std::string batch_data) {
  if (batch_data.size() < 12) {
    return {Code::kCorruption, "replicated write batch is shorter than its header"};
  }
  rocksdb::WriteBatch batch(std::move(batch_data));
  TouchedKeys touched(engine_, this, &locks_);
  if (auto rs = batch.Iterate(&touched); !rs.ok()) {
    return {Code::kCorruption, "malformed replicated write batch: " + rs.ToString()};
  }
  std::vector<size_t> stripes;
  if (touched.everything) {
    stripes.resize(locks_.stripes());
    for (size_t i = 0; i < stripes.size(); ++i) {
      stripes[i] = i;
    }
  } else {
    stripes = std::move(touched.stripes);
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
  }
  LockGuard guard(&locks_, std::move(stripes));
  PinIncompleteVersions(touched.page_versions, touched.meta_versions);
  auto s = engine_->WriteReplicated(&batch);
  if (s.ok()) {
    UnpinCompletedVersions(touched.meta_versions);
  }
  if (touched.database_map) {
    if (auto ls = LoadDatabaseMap(); !ls.ok() && s.ok()) {
      s = ls;
    }
  }
  // Erased whether or not the write succeeded: the cache then reads RocksDB, which is right
  // either way.
  if (touched.everything) {
    mem_.Clear();
  } else {
    for (const auto& k : touched.cache_keys) {
      mem_.Erase(k);
    }
  }
  return s;
}

void Db::PinIncompleteVersions(
    const std::map<uint64_t, std::pair<uint16_t, std::string>>& page_versions,
    const std::set<uint64_t>& meta_versions) {
  if (page_versions.empty()) {
    return;
  }
  std::lock_guard lock(replica_pins_mu_);
  for (const auto& [version, where] : page_versions) {
    if (meta_versions.count(version) != 0 || replica_pins_.count(version) != 0) {
      continue;
    }
    // Pages without their metadata: a version still being written, unless the metadata that
    // names it is already here (pages of a live filter, written on their own).
    std::string raw;
    auto s = engine_->db()->Get(rocksdb::ReadOptions(), engine_->metadata_cf(),
                                EncodeMetaKey(where.first, where.second), &raw);
    if (s.ok()) {
      auto meta = DecodeMetadata(raw);
      if (meta && meta->type == KeyType::kCuckoo && meta->version == version) {
        continue;
      }
    }
    engine_->PinVersion(version);
    replica_pins_.insert(version);
  }
}

void Db::UnpinCompletedVersions(const std::set<uint64_t>& meta_versions) {
  std::lock_guard lock(replica_pins_mu_);
  if (replica_pins_.empty()) {
    return;
  }
  for (uint64_t v : meta_versions) {
    if (replica_pins_.erase(v) != 0) {
      engine_->UnpinVersion(v);  // its metadata is stored now: the version lives on its own
    }
  }
}

Status Db::DeleteSlots(uint16_t first, uint16_t last) {
  std::vector<size_t> all(locks_.stripes());
  for (size_t i = 0; i < all.size(); ++i) {
    all[i] = i;
  }
  LockGuard guard(&locks_, std::move(all));
  engine_->Settle();
  rocksdb::WriteBatch batch;
  const SlotSpan span{first, last};
  auto range_key = [](uint32_t ns, uint32_t slot) {
    std::string k(4, '\0');
    k[0] = static_cast<char>(ns >> 8);
    k[1] = static_cast<char>(ns);
    k[2] = static_cast<char>(slot >> 8);
    k[3] = static_cast<char>(slot);
    return k;
  };
  // One range delete per namespace that holds anything: the namespaces are found by seeking
  // from one to the next.
  for (auto* cf : {engine_->metadata_cf(), engine_->pages_cf()}) {
    std::unique_ptr<rocksdb::Iterator> it(engine_->db()->NewIterator(rocksdb::ReadOptions(), cf));
    uint32_t ns = 0;
    for (it->Seek(range_key(0, 0)); it->Valid() && ns <= 0xFFFF;) {
      const auto key = it->key();
      if (key.size() < 2) {
        it->Next();
        continue;
      }
      ns =
          (static_cast<uint32_t>(static_cast<uint8_t>(key[0])) << 8) | static_cast<uint8_t>(key[1]);
      batch.DeleteRange(cf, range_key(ns, first), range_key(ns, uint32_t{last} + 1));
      ++ns;
      if (ns > 0xFFFF) {
        break;
      }
      it->Seek(range_key(ns, 0));
    }
    if (!it->status().ok()) {
      return Engine::FromRocks(it->status());
    }
  }
  std::unique_ptr<rocksdb::Iterator> it(
      engine_->db()->NewIterator(rocksdb::ReadOptions(), engine_->default_cf()));
  for (it->Seek(std::string(1, kAliasPrefix));
       it->Valid() && it->key().size() > 0 && it->key()[0] == kAliasPrefix; it->Next()) {
    const auto slot =
        RawKeySlot(RawCf::kDefault, std::string_view(it->key().data(), it->key().size()));
    if (slot && span.Contains(*slot)) {
      batch.Delete(engine_->default_cf(), it->key());
    }
  }
  if (!it->status().ok()) {
    return Engine::FromRocks(it->status());
  }
  auto s = batch.Count() == 0 ? Status::Ok() : engine_->WriteReplicated(&batch);
  mem_.Clear();
  return s;
}

void Db::SwapEngine(Engine* engine) {
  {
    std::lock_guard lock(replica_pins_mu_);
    replica_pins_.clear();  // (pins of the engine that was closed)
  }
  engine_ = engine;
  mem_.Clear();
  (void)LoadDatabaseMap();  // (a record that cannot be read leaves every database in place)
  std::lock_guard lock(scan_mu_);
  for (auto& c : scan_cursors_) {
    c = {};
  }
}

}  // namespace cuckood::storage

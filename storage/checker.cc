#include "storage/checker.h"

#include <map>
#include <memory>

#include "core/filter.h"
#include "storage/engine.h"
#include "storage/format.h"

namespace cuckood::storage {
namespace {

struct LiveFilter {
  std::string key;
  uint16_t ns = 0;
  Metadata meta;
  uint64_t non_empty = 0;
};

}  // namespace

CheckReport CheckDatabase(const std::string& dir, std::ostream& out) {
  CheckReport rep;
  EngineOptions eo;
  eo.dir = dir;
  eo.read_only = true;
  auto engine = Engine::Open(eo);
  if (!engine.ok()) {
    out << "error: " << engine.status().message() << "\n";
    rep.errors++;
    return rep;
  }
  Engine& e = **engine;
  auto* db = e.db();
  uint64_t reserved = 0;
  {
    std::string v;
    if (db->Get(rocksdb::ReadOptions(), e.default_cf(), std::string(kVersionReservedKey), &v)
            .ok() &&
        v.size() == 8) {
      for (int i = 7; i >= 0; --i) {
        reserved = (reserved << 8) | static_cast<uint8_t>(v[static_cast<size_t>(i)]);
      }
    }
  }
  // Live filters by page prefix.
  std::map<std::string, LiveFilter> live;
  const uint64_t now = NowMs();
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), e.metadata_cf()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint16_t ns = 0;
    std::string_view key;
    auto k = it->key();
    auto v = it->value();
    if (!DecodeMetaKey(std::string_view(k.data(), k.size()), &ns, &key)) {
      out << "error: metadata key too short\n";
      rep.errors++;
      continue;
    }
    auto meta = DecodeMetadata(std::string_view(v.data(), v.size()));
    if (!meta) {
      out << "error: db" << ns << " key '" << key << "': malformed metadata record\n";
      rep.errors++;
      continue;
    }
    if (meta->Expired(now)) {
      continue;
    }
    rep.keys++;
    if (meta->type != KeyType::kCuckoo) {
      continue;
    }
    rep.filters++;
    if (meta->version > reserved) {
      out << "error: db" << ns << " key '" << key << "': version " << meta->version
          << " above the reserved high-water mark " << reserved << "\n";
      rep.errors++;
    }
    // Build the prefix before moving meta: owner may point into meta->cuckoo.owner.
    std::string_view owner = meta->cuckoo.owner.empty() ? key : meta->cuckoo.owner;
    std::string prefix = EncodePagePrefix(ns, owner, meta->version);
    LiveFilter lf{std::string(key), ns, std::move(*meta), 0};
    live.emplace(std::move(prefix), std::move(lf));
  }
  if (!it->status().ok()) {
    out << "error: reading metadata: " << it->status().ToString() << "\n";
    rep.errors++;
  }
  it.reset(db->NewIterator(rocksdb::ReadOptions(), e.pages_cf()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rep.pages++;
    auto k = it->key();
    std::string_view raw(k.data(), k.size());
    PageKeyParts parts;
    if (!DecodePageKey(raw, &parts)) {
      out << "error: malformed page key\n";
      rep.errors++;
      continue;
    }
    auto found = live.find(std::string(raw.substr(0, raw.size() - 6)));
    if (found == live.end()) {
      rep.dead_pages++;
      continue;
    }
    auto& lf = found->second;
    const auto& f = lf.meta.cuckoo.filter;
    if (parts.filter >= f.num_filters) {
      // Beyond the chain: unreachable now. (Compaction deletes a dropped sub-filter's pages in
      // the same write, so none should be found; a chain that grew again would read it.)
      rep.dead_pages++;
      continue;
    }
    PageGeometry geo(lf.meta.cuckoo.page_size, f.bucket_size);
    uint64_t want = geo.PageLength(parts.page, core::SubFilterBuckets(f, parts.filter));
    auto v = it->value();
    if (v.size() != want) {
      out << "error: db" << lf.ns << " key '" << lf.key << "': filter " << parts.filter << " page "
          << parts.page << " has " << v.size() << " bytes, expected " << want << "\n";
      rep.errors++;
      continue;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      lf.non_empty += v.data()[i] != 0 ? 1 : 0;
    }
  }
  for (auto& [prefix, lf] : live) {
    // A filter loaded from a SCANDUMP header carries the header's own counters.
    if (lf.meta.cuckoo.base_capacity != 0 && lf.non_empty != lf.meta.cuckoo.filter.num_items) {
      out << "error: db" << lf.ns << " key '" << lf.key << "': " << lf.meta.cuckoo.filter.num_items
          << " items in metadata but " << lf.non_empty << " non-empty slots\n";
      rep.errors++;
    }
  }
  out << "checked " << rep.keys << " keys (" << rep.filters << " filters), " << rep.pages
      << " pages (" << rep.dead_pages << " awaiting compaction): " << rep.errors << " errors\n";
  return rep;
}

}  // namespace cuckood::storage

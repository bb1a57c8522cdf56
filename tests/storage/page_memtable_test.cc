#include "storage/page_memtable.h"

#include <malloc.h>
#include <rocksdb/db.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "storage/test_util.h"

namespace cuckood::storage {
namespace {

using testing::TempDir;

// ---- the representation on its own ---------------------------------------------------------

// (The representation orders keys itself; the comparator RocksDB hands it is not used.)
class UnusedComparator final : public rocksdb::MemTableRep::KeyComparator {
 public:
  int operator()(const char*, const char*) const override { return 0; }
  int operator()(const char*, const rocksdb::Slice&) const override { return 0; }
};

struct Key {
  std::string user;
  uint64_t seq;
  std::string value;
  // RocksDB's order: user key ascending, then sequence number descending.
  bool operator<(const Key& o) const { return std::tie(user, o.seq) < std::tie(o.user, seq); }
};

void PutVarint32(std::string* out, uint32_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A memtable key as RocksDB lays it out: varint32 internal key length, user key, 8-byte tag
// (seq << 8 | type, little-endian), varint32 value length, value.
std::string MemtableKey(const Key& k) {
  std::string out;
  PutVarint32(&out, static_cast<uint32_t>(k.user.size() + 8));
  out += k.user;
  const uint64_t tag = (k.seq << 8) | 2;  // type: merge
  for (int i = 0; i < 8; ++i) {
    out.push_back(static_cast<char>(tag >> (8 * i)));
  }
  PutVarint32(&out, static_cast<uint32_t>(k.value.size()));
  out += k.value;
  return out;
}

std::string InternalKey(const Key& k) {
  std::string mk = MemtableKey(k);
  size_t p = 0;
  while ((static_cast<uint8_t>(mk[p]) & 0x80) != 0) {
    ++p;
  }
  return mk.substr(p + 1, k.user.size() + 8);
}

Key Decode(const char* mk) {
  uint32_t len = 0;
  int shift = 0;
  while (true) {
    const auto b = static_cast<uint8_t>(*mk++);
    len |= static_cast<uint32_t>(b & 0x7f) << shift;
    shift += 7;
    if ((b & 0x80) == 0) {
      break;
    }
  }
  Key k;
  k.user.assign(mk, len - 8);
  uint64_t tag = 0;
  for (int i = 7; i >= 0; --i) {
    tag = (tag << 8) | static_cast<uint8_t>(mk[len - 8 + i]);
  }
  k.seq = tag >> 8;
  return k;
}

class Rep {
 public:
  explicit Rep(size_t write_buffer = 1 << 20)
      : factory_(NewPageMemTableFactory(write_buffer)),
        rep_(factory_->CreateMemTableRep(cmp_, nullptr, nullptr, nullptr)) {}
  bool Insert(const Key& k) {
    const std::string mk = MemtableKey(k);
    char* buf = nullptr;
    rocksdb::KeyHandle h = rep_->Allocate(mk.size(), &buf);
    std::memcpy(buf, mk.data(), mk.size());
    return rep_->InsertKey(h);
  }
  rocksdb::MemTableRep* operator->() { return rep_.get(); }

 private:
  UnusedComparator cmp_;
  std::shared_ptr<rocksdb::MemTableRepFactory> factory_;
  std::unique_ptr<rocksdb::MemTableRep> rep_;
};

std::vector<Key> Forward(rocksdb::MemTableRep::Iterator* it) {
  std::vector<Key> out;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.push_back(Decode(it->key()));
  }
  return out;
}

bool SameKeys(const std::vector<Key>& a, const std::vector<Key>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](auto& x, auto& y) {
           return x.user == y.user && x.seq == y.seq;
         });
}

TEST_CASE("page memtable: entries come out in RocksDB's order, whatever order they went in") {
  Rep rep;
  std::mt19937_64 rng(7);
  std::vector<Key> keys;
  for (uint64_t seq = 1; seq <= 5000; ++seq) {
    // Few user keys, many entries each, of lengths that make some keys prefixes of others.
    std::string user = "page-" + std::to_string(rng() % 97);
    user.resize(user.size() - rng() % 2, '\0');
    keys.push_back({user, seq, std::string(rng() % 40, 'v')});
  }
  std::shuffle(keys.begin(), keys.end(), rng);  // older entries arrive after newer ones too
  for (const Key& k : keys) {
    REQUIRE(rep.Insert(k));
  }
  std::sort(keys.begin(), keys.end());

  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
  CHECK(SameKeys(Forward(it.get()), keys));

  std::vector<Key> backward;
  for (it->SeekToLast(); it->Valid(); it->Prev()) {
    backward.push_back(Decode(it->key()));
  }
  std::reverse(backward.begin(), backward.end());
  CHECK(SameKeys(backward, keys));

  for (const Key& k : keys) {
    CHECK(rep->Contains(MemtableKey(k).c_str()));
  }
  CHECK_FALSE(rep->Contains(MemtableKey({"page-1", 999999, ""}).c_str()));
  CHECK_FALSE(rep->Contains(MemtableKey({"absent", 1, ""}).c_str()));
}

TEST_CASE("page memtable: a key and sequence number already there is refused") {
  Rep rep;
  REQUIRE(rep.Insert({"a", 5, "x"}));
  REQUIRE(rep.Insert({"a", 7, "y"}));
  CHECK_FALSE(rep.Insert({"a", 5, "z"}));
  CHECK_FALSE(rep.Insert({"a", 7, "z"}));
  CHECK(rep.Insert({"a", 6, "z"}));
  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
  auto all = Forward(it.get());
  REQUIRE(all.size() == 3);
  CHECK(all[0].seq == 7);
  CHECK(all[1].seq == 6);
  CHECK(all[2].seq == 5);
}

TEST_CASE("page memtable: Seek and SeekForPrev land where a sorted list says") {
  Rep rep;
  std::mt19937_64 rng(11);
  std::vector<Key> keys;
  for (uint64_t seq = 1; seq <= 3000; ++seq) {
    keys.push_back({"k" + std::to_string(rng() % 300 * 2), seq, ""});  // even numbers only
  }
  for (const Key& k : keys) {
    REQUIRE(rep.Insert(k));
  }
  std::sort(keys.begin(), keys.end());
  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
  for (int i = 0; i < 3000; ++i) {
    // Targets on present and absent user keys (odd numbers), at any sequence number.
    const Key t{"k" + std::to_string(rng() % 610), rng() % 3100, ""};
    const std::string ik = InternalKey(t);
    const std::string mk = MemtableKey(t);
    auto lb = std::lower_bound(keys.begin(), keys.end(), t);  // first >= t

    it->Seek(ik, i % 2 == 0 ? mk.c_str() : nullptr);
    if (lb == keys.end()) {
      CHECK_FALSE(it->Valid());
    } else {
      REQUIRE(it->Valid());
      Key got = Decode(it->key());
      CHECK(got.user == lb->user);
      CHECK(got.seq == lb->seq);
    }

    // Last <= t: the one at lb when it equals t, else the one before lb.
    auto le = lb;
    if (lb == keys.end() || t < *lb) {
      le = lb == keys.begin() ? keys.end() : std::prev(lb);
    }
    it->SeekForPrev(ik, i % 2 == 0 ? mk.c_str() : nullptr);
    if (le == keys.end()) {
      CHECK_FALSE(it->Valid());
    } else {
      REQUIRE(it->Valid());
      Key got = Decode(it->key());
      CHECK(got.user == le->user);
      CHECK(got.seq == le->seq);
    }
  }
}

TEST_CASE("page memtable: the point-read iterator stays on the sought key") {
  Rep rep;
  REQUIRE(rep.Insert({"a", 1, ""}));
  REQUIRE(rep.Insert({"b", 2, ""}));
  REQUIRE(rep.Insert({"b", 4, ""}));
  REQUIRE(rep.Insert({"c", 3, ""}));
  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetDynamicPrefixIterator(nullptr));
  it->Seek(InternalKey({"b", 9, ""}), nullptr);
  REQUIRE(it->Valid());
  CHECK(Decode(it->key()).seq == 4);
  it->Next();
  REQUIRE(it->Valid());
  CHECK(Decode(it->key()).seq == 2);
  it->Next();
  CHECK_FALSE(it->Valid());  // (the whole-order iterator would go on to "c")
  it->Seek(InternalKey({"b", 3, ""}), nullptr);
  REQUIRE(it->Valid());
  CHECK(Decode(it->key()).seq == 2);
  it->Seek(InternalKey({"b", 1, ""}), nullptr);
  CHECK_FALSE(it->Valid());
  it->Seek(InternalKey({"bb", 9, ""}), nullptr);
  CHECK_FALSE(it->Valid());
}

TEST_CASE("page memtable: readers see a consistent order while the writer inserts") {
  Rep rep(8 << 20);
  constexpr uint64_t kEntries = 40000;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> bad{0};
  std::atomic<uint64_t> scans{0};
  auto reader = [&] {
    std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
    while (!done.load()) {
      std::vector<Key> seen = Forward(it.get());
      for (size_t i = 1; i < seen.size(); ++i) {
        if (!(seen[i - 1] < seen[i])) {
          bad.fetch_add(1);
        }
      }
      // Every entry seen in a scan is found again by a point read.
      for (size_t i = 0; i < seen.size(); i += 97) {
        if (!rep->Contains(MemtableKey(seen[i]).c_str())) {
          bad.fetch_add(1);
        }
      }
      scans.fetch_add(1);
    }
  };
  std::thread r1(reader);
  std::thread r2(reader);
  std::mt19937_64 rng(3);
  for (uint64_t seq = 1; seq <= kEntries; ++seq) {
    REQUIRE(rep.Insert({"p" + std::to_string(rng() % 2000), seq, "v"}));
  }
  while (scans.load() < 4) {
    std::this_thread::yield();
  }
  done = true;
  r1.join();
  r2.join();
  CHECK(bad.load() == 0);
  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
  CHECK(Forward(it.get()).size() == kEntries);
}

// ---- inside RocksDB, against RocksDB's own skiplist ----------------------------------------

// Concatenates operands with '|' (enough to tell their order apart).
class Append final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* out, rocksdb::Logger*) const override {
    out->assign(existing ? existing->ToString() + "|" : "");
    out->append(value.data(), value.size());
    return true;
  }
  const char* Name() const override { return "test.Append"; }
};

struct TwoDbs {
  TempDir dir_pages, dir_skip;
  std::unique_ptr<rocksdb::DB> pages, skip;

  static rocksdb::Options Opts(bool page_rep, size_t write_buffer) {
    rocksdb::Options o;
    o.create_if_missing = true;
    o.merge_operator = std::make_shared<Append>();
    o.write_buffer_size = write_buffer;
    if (page_rep) {
      o.memtable_factory = NewPageMemTableFactory(write_buffer);
      o.allow_concurrent_memtable_write = false;
    }
    return o;
  }
  void Open(size_t write_buffer) {
    rocksdb::DB* a = nullptr;
    rocksdb::DB* b = nullptr;
    REQUIRE(rocksdb::DB::Open(Opts(true, write_buffer), dir_pages.path(), &a).ok());
    REQUIRE(rocksdb::DB::Open(Opts(false, write_buffer), dir_skip.path(), &b).ok());
    pages.reset(a);
    skip.reset(b);
  }
  void Write(rocksdb::WriteBatch& batch) {
    REQUIRE(pages->Write(rocksdb::WriteOptions(), &batch).ok());
    REQUIRE(skip->Write(rocksdb::WriteOptions(), &batch).ok());
  }
};

using Snapshots = std::vector<std::pair<const rocksdb::Snapshot*, const rocksdb::Snapshot*>>;

// Reads everything both ways (point reads, forward and backward scans, seeks) at the latest
// state and at every snapshot, and requires the same answers from both databases.
void CompareReads(TwoDbs& t, const Snapshots& snaps, std::mt19937_64& rng, int nkeys) {
  std::vector<std::pair<const rocksdb::Snapshot*, const rocksdb::Snapshot*>> views = snaps;
  views.push_back({nullptr, nullptr});
  for (auto [sa, sb] : views) {
    rocksdb::ReadOptions ra, rb;
    ra.snapshot = sa;
    rb.snapshot = sb;
    std::vector<std::string> keys;
    for (int i = 0; i < nkeys; ++i) {
      keys.push_back("key" + std::to_string(i));
    }
    for (const std::string& k : keys) {
      std::string va, vb;
      rocksdb::Status a = t.pages->Get(ra, k, &va);
      rocksdb::Status b = t.skip->Get(rb, k, &vb);
      REQUIRE(a.code() == b.code());
      REQUIRE(va == vb);
    }
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    std::vector<std::string> ma, mb;
    auto sta = t.pages->MultiGet(ra, slices, &ma);
    auto stb = t.skip->MultiGet(rb, slices, &mb);
    for (size_t i = 0; i < keys.size(); ++i) {
      REQUIRE(sta[i].code() == stb[i].code());
      REQUIRE(ma[i] == mb[i]);
    }
    std::unique_ptr<rocksdb::Iterator> ia(t.pages->NewIterator(ra));
    std::unique_ptr<rocksdb::Iterator> ib(t.skip->NewIterator(rb));
    auto same = [&] {
      REQUIRE(ia->Valid() == ib->Valid());
      if (ia->Valid()) {
        REQUIRE(ia->key() == ib->key());
        REQUIRE(ia->value() == ib->value());
      }
    };
    for (ia->SeekToFirst(), ib->SeekToFirst(); ib->Valid(); ia->Next(), ib->Next()) {
      same();
    }
    same();
    for (ia->SeekToLast(), ib->SeekToLast(); ib->Valid(); ia->Prev(), ib->Prev()) {
      same();
    }
    same();
    for (int i = 0; i < 50; ++i) {
      const std::string target = "key" + std::to_string(rng() % (nkeys + 5));
      ia->Seek(target);
      ib->Seek(target);
      for (int s = 0; s < 3 && ib->Valid(); ++s, ia->Next(), ib->Next()) {
        same();
      }
      same();
      ia->SeekForPrev(target);
      ib->SeekForPrev(target);
      for (int s = 0; s < 3 && ib->Valid(); ++s, ia->Prev(), ib->Prev()) {
        same();
      }
      same();
    }
    REQUIRE(ia->status().ok());
  }
}

TEST_CASE("page memtable: RocksDB answers as with its own skiplist, through flushes and reopens") {
  TwoDbs t;
  const size_t write_buffer = GENERATE(size_t{256} << 10, size_t{64} << 20);
  t.Open(write_buffer);
  std::mt19937_64 rng(write_buffer);
  constexpr int kKeys = 120;
  Snapshots snaps;
  for (int round = 0; round < 6; ++round) {
    for (int b = 0; b < 300; ++b) {
      rocksdb::WriteBatch batch;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) {
        const std::string key = "key" + std::to_string(rng() % kKeys);
        const std::string value = std::to_string(rng() % 1000) + std::string(rng() % 200, 'x');
        switch (rng() % 10) {
          case 0:
            batch.Put(key, value);
            break;
          case 1:
            batch.Delete(key);
            break;
          default:
            batch.Merge(key, value);
        }
      }
      t.Write(batch);
      if (rng() % 100 == 0) {
        snaps.push_back({t.pages->GetSnapshot(), t.skip->GetSnapshot()});
      }
    }
    CompareReads(t, snaps, rng, kKeys);
    if (round == 2) {
      REQUIRE(t.pages->Flush(rocksdb::FlushOptions()).ok());
      REQUIRE(t.skip->Flush(rocksdb::FlushOptions()).ok());
      CompareReads(t, snaps, rng, kKeys);
    }
    if (round == 4) {
      // Reopen: the writes since the last flush come back from the WAL into a new memtable.
      for (auto [a, b] : snaps) {
        t.pages->ReleaseSnapshot(a);
        t.skip->ReleaseSnapshot(b);
      }
      snaps.clear();
      t.pages.reset();
      t.skip.reset();
      t.Open(write_buffer);
      CompareReads(t, snaps, rng, kKeys);
    }
  }
  for (auto [a, b] : snaps) {
    t.pages->ReleaseSnapshot(a);
    t.skip->ReleaseSnapshot(b);
  }
}

TEST_CASE("page memtable: a full memtable is flushed (its memory is counted)") {
  TempDir dir;
  rocksdb::Options o = TwoDbs::Opts(true, 1 << 20);
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(o, dir.path(), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  const std::string value(100, 'v');
  for (int i = 0; i < 80000; ++i) {  // ~10 MiB of entries into 1 MiB memtables
    REQUIRE(db->Merge(rocksdb::WriteOptions(), "key" + std::to_string(i % 5000), value).ok());
  }
  uint64_t active = 0;
  uint64_t entries = 0;
  REQUIRE(db->GetIntProperty("rocksdb.cur-size-active-mem-table", &active));
  REQUIRE(db->GetIntProperty("rocksdb.num-entries-active-mem-table", &entries));
  CHECK(active > 0);
  CHECK(active < (4u << 20));
  CHECK(entries < 20000);  // the memtable was switched (and flushed) several times
  std::string v;
  REQUIRE(db->Get(rocksdb::ReadOptions(), "key4999", &v).ok());
  CHECK(std::count(v.begin(), v.end(), '|') == 15);  // 16 operands of key 4999
}

TEST_CASE("page memtable: prefetching a batch's inserts is safe across memtable switches") {
  // The hint reads the newest memtable's hash table, which it keeps alive, and only prefetches
  // the page nodes chained there: after the memtable is flushed and freed, and after the
  // database is closed, it must neither read freed memory (ASan) nor change what is stored.
  TempDir dir;
  rocksdb::Options o = TwoDbs::Opts(true, 1 << 20);
  auto factory = o.memtable_factory;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(o, dir.path(), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  const uint32_t cf = db->DefaultColumnFamily()->GetID();
  // (a second target: a column family the batches do not write)
  const MemTableTarget targets[] = {{factory.get(), cf}, {factory.get(), cf + 1}};
  const std::string value(100, 'v');
  for (int i = 0; i < 40000; ++i) {  // several memtables, switched and flushed
    rocksdb::WriteBatch batch;
    REQUIRE(batch.Merge("key" + std::to_string(i % 3000), value).ok());
    REQUIRE(batch.Put("other" + std::to_string(i % 7), value).ok());
    PrefetchPageInserts(targets, batch);
    REQUIRE(db->Write(rocksdb::WriteOptions(), &batch).ok());
  }
  REQUIRE(db->Flush(rocksdb::FlushOptions()).ok());
  rocksdb::WriteBatch last;
  REQUIRE(last.Merge("key1", value).ok());
  PrefetchPageInserts(targets, last);  // (the newest memtable is empty now)
  REQUIRE(db->Write(rocksdb::WriteOptions(), &last).ok());
  std::string v;
  REQUIRE(db->Get(rocksdb::ReadOptions(), "key2999", &v).ok());
  CHECK(std::count(v.begin(), v.end(), '|') == 12);  // its 13 operands, in order
  REQUIRE(db->Close().ok());
  db.reset();
  PrefetchPageInserts(targets, last);  // (every memtable is gone)
  // Another representation's factory: nothing is done.
  rocksdb::SkipListFactory skiplist;
  const MemTableTarget other[] = {{&skiplist, cf}};
  PrefetchPageInserts(other, last);
}

TEST_CASE("page memtable: point reads keep no memory") {
  // RocksDB's point read of a memtable asks the representation for an iterator and never
  // deletes it: a new one per read would be a leak of every read.
  TempDir dir;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(TwoDbs::Opts(true, 64 << 20), dir.path(), &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(db->Merge(rocksdb::WriteOptions(), "key" + std::to_string(i), "v").ok());
  }
  std::vector<std::string> keys = {"key1", "key500", "absent"};
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  auto reads = [&](int n) {
    std::string v;
    std::vector<std::string> values;
    for (int i = 0; i < n; ++i) {
      (void)db->Get(rocksdb::ReadOptions(), "key" + std::to_string(i % 1200), &v);
      (void)db->MultiGet(rocksdb::ReadOptions(), slices, &values);
    }
  };
  reads(1000);  // (first-use allocations)
  const size_t before = mallinfo2().uordblks;
  reads(100000);
  const size_t after = mallinfo2().uordblks;
  CHECK(after < before + (1u << 20));  // 400,000 leaked iterators would be over 16 MiB
}

}  // namespace
}  // namespace cuckood::storage

#include "storage/page_memtable.h"

#include <rocksdb/slice.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>
#include <vector>

namespace cuckood::storage {
namespace {

using rocksdb::KeyHandle;
using rocksdb::MemTableRep;
using rocksdb::Slice;

// ---- keys --------------------------------------------------------------------------------------
// A memtable key (RocksDB's format): varint32 length of the internal key, the internal key (the
// user key, then 8 bytes little-endian of sequence << 8 | type), then the value. Internal keys
// are ordered by user key ascending, then by that 8-byte tag descending (newest first).

struct Parsed {
  const char* user;
  size_t user_len;
  uint64_t tag;
};

uint64_t LoadTag(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) {
    v = __builtin_bswap64(v);
  }
  return v;
}

Parsed ParseInternal(const char* ikey, size_t len) {
  return {ikey, len - 8, LoadTag(ikey + len - 8)};
}

Parsed ParseMemtableKey(const char* k) {
  uint32_t len = 0;
  for (int shift = 0; shift <= 28; shift += 7) {
    const uint32_t b = static_cast<uint8_t>(*k++);
    len |= (b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      break;
    }
  }
  return ParseInternal(k, len);
}

int CompareUser(const char* a, size_t an, const char* b, size_t bn) {
  const int c = std::memcmp(a, b, std::min(an, bn));
  if (c != 0) {
    return c;
  }
  return an < bn ? -1 : (an > bn ? 1 : 0);
}

size_t HashUser(const char* p, size_t n) {
  return std::hash<std::string_view>{}({p, n});
}
uint16_t HashTag(size_t hash) {
  return static_cast<uint16_t>(hash >> (8 * sizeof(size_t) - 16));
}

// ---- nodes -------------------------------------------------------------------------------------

// One memtable entry; RocksDB writes the memtable key right after it (Allocate).
struct Entry {
  std::atomic<Entry*> next{nullptr};  // the page's next older entry
  const char* key() const { return reinterpret_cast<const char*>(this + 1); }
  uint64_t tag() const { return ParseMemtableKey(key()).tag; }
};
static_assert(sizeof(Entry) == 8);

constexpr int kMaxHeight = 12;  // with a branching factor of 4: up to ~16M pages per memtable

// One user key (a page) and its entries, newest first. Its `height` skiplist links follow it.
// (Kept small: at scale most entries of a memtable are of pages with no other entry.)
struct Page {
  const char* user = nullptr;  // the user key, a copy after the links
  std::atomic<Entry*> head{nullptr};
  std::atomic<Page*> chain{nullptr};  // the next page in the same hash bucket
  uint32_t user_len = 0;
  uint16_t height = 0;
  uint16_t hash_tag = 0;  // the top bits of the key's hash: most other keys in a bucket differ
  // The tag of the head entry, for the writer only: a new entry is normally the newest, and
  // knowing it here spares reading the head entry (a cache miss) on every insert.
  uint64_t newest_tag = 0;

  std::atomic<Page*>* links() { return reinterpret_cast<std::atomic<Page*>*>(this + 1); }
  Page* Next(int level) { return links()[level].load(std::memory_order_acquire); }
  Entry* Head() const { return head.load(std::memory_order_acquire); }
};
static_assert(sizeof(Page) == 40);

// Bump allocation in blocks, for the one writer; freed with the memtable.
class NodeArena {
 public:
  explicit NodeArena(size_t block) : block_(block) {}
  char* Allocate(size_t n) {
    n = (n + 7) & ~size_t{7};
    if (n > left_) {
      if (n > block_ / 4) {
        return NewBlock(n);  // a large entry gets a block of its own
      }
      ptr_ = NewBlock(block_);
      left_ = block_;
    }
    char* p = ptr_;
    ptr_ += n;
    left_ -= n;
    return p;
  }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  char* NewBlock(size_t n) {
    blocks_.emplace_back(new char[n]);
    bytes_.fetch_add(n, std::memory_order_relaxed);
    return blocks_.back().get();
  }
  const size_t block_;
  char* ptr_ = nullptr;
  size_t left_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::atomic<size_t> bytes_{0};
};

// ---- the representation ------------------------------------------------------------------------

// A memtable's hash table: pages by the hash of their key, chained.
struct BucketArray {
  explicit BucketArray(size_t buckets)
      : mask(buckets - 1), slots(std::make_unique<std::atomic<Page*>[]>(buckets)) {}
  const size_t mask;
  std::unique_ptr<std::atomic<Page*>[]> slots;
};

class PageRep final : public MemTableRep {
 public:
  PageRep(rocksdb::Allocator* allocator, std::shared_ptr<BucketArray> buckets, size_t block)
      : MemTableRep(allocator),
        mask_(buckets->mask),
        table_(std::move(buckets)),
        buckets_(table_->slots.get()),
        arena_(block) {
    head_ = NewPage(kMaxHeight);
  }

  KeyHandle Allocate(const size_t len, char** buf) override {
    char* mem = arena_.Allocate(sizeof(Entry) + len);
    auto* e = new (mem) Entry;
    *buf = mem + sizeof(Entry);
    return e;
  }

  void Insert(KeyHandle handle) override { (void)InsertKey(handle); }
  void InsertWithHint(KeyHandle handle, void** /*hint*/) override { (void)InsertKey(handle); }
  bool InsertKeyWithHint(KeyHandle handle, void** /*hint*/) override { return InsertKey(handle); }

  // The one writer. Everything a reader can reach is complete before it is linked in (release).
  bool InsertKey(KeyHandle handle) override {
    auto* e = static_cast<Entry*>(handle);
    const Parsed k = ParseMemtableKey(e->key());
    const size_t hash = HashUser(k.user, k.user_len);
    Page* p = Find(k.user, k.user_len, hash);
    if (p == nullptr) {
      AddPage(e, k, hash);
      entries_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    if (k.tag > p->newest_tag) {  // the newest entry of the page (the usual case)
      e->next.store(p->head.load(std::memory_order_relaxed), std::memory_order_relaxed);
      p->head.store(e, std::memory_order_release);
      p->newest_tag = k.tag;
      entries_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    Entry* prev = nullptr;
    Entry* cur = p->head.load(std::memory_order_relaxed);
    while (cur != nullptr && cur->tag() > k.tag) {  // normally none: a new entry is the newest
      prev = cur;
      cur = cur->next.load(std::memory_order_relaxed);
    }
    if (cur != nullptr && cur->tag() == k.tag) {
      return false;  // this key and sequence number are already here
    }
    e->next.store(cur, std::memory_order_relaxed);
    (prev != nullptr ? prev->next : p->head).store(e, std::memory_order_release);
    entries_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  bool Contains(const char* key) const override {
    const Parsed k = ParseMemtableKey(key);
    const Page* p = Find(k.user, k.user_len, HashUser(k.user, k.user_len));
    if (p == nullptr) {
      return false;
    }
    const Entry* e = AtOrAfter(p, k.tag);
    return e != nullptr && e->tag() == k.tag;
  }

  size_t ApproximateMemoryUsage() override {
    return arena_.bytes() + (mask_ + 1) * sizeof(std::atomic<Page*>);
  }

  // The pages from start to end, times the mean number of entries per page.
  uint64_t ApproximateNumEntries(const Slice& start_ikey, const Slice& end_ikey) override {
    if (start_ikey.size() < 8 || end_ikey.size() < 8) {
      return 0;
    }
    const Parsed s = ParseInternal(start_ikey.data(), start_ikey.size());
    const Parsed e = ParseInternal(end_ikey.data(), end_ikey.size());
    uint64_t n = 0;
    for (Page* p = FindGreaterOrEqual(s.user, s.user_len, nullptr);
         p != nullptr && CompareUser(p->user, p->user_len, e.user, e.user_len) < 0;
         p = p->Next(0)) {
      ++n;
    }
    const uint64_t pages = pages_.load(std::memory_order_relaxed);
    const uint64_t entries = entries_.load(std::memory_order_relaxed);
    return pages == 0 ? 0 : n * std::max<uint64_t>(1, entries / pages);
  }

  Iterator* GetIterator(rocksdb::Arena* arena) override;
  // A Seek of this one finds the page through the hash table and stays in it: the "prefix" is
  // the whole user key. RocksDB's point reads (MemTableRep::Get, not overridden here: its
  // argument's type is internal to RocksDB) take one for every read, seek it and never delete
  // it. So without an arena it is one iterator per thread, made again by every call, whose
  // delete does nothing.
  Iterator* GetDynamicPrefixIterator(rocksdb::Arena* arena) override;

  // ---- lookups, also for the iterators ----
  Page* head() const { return head_; }

  Page* Find(const char* user, size_t n, size_t hash) const {
    for (Page* p = buckets_[hash & mask_].load(std::memory_order_acquire); p != nullptr;
         p = p->chain.load(std::memory_order_acquire)) {
      if (p->hash_tag == HashTag(hash) && p->user_len == n && std::memcmp(p->user, user, n) == 0) {
        return p;
      }
    }
    return nullptr;
  }

  // The first page whose user key is >= the given one (nullptr: none); prev[level] receives the
  // last page before it on every level.
  Page* FindGreaterOrEqual(const char* user, size_t n, Page** prev) const {
    Page* x = head_;
    int level = max_height_.load(std::memory_order_relaxed) - 1;
    while (true) {
      Page* next = x->Next(level);
      if (next != nullptr && CompareUser(next->user, next->user_len, user, n) < 0) {
        x = next;
      } else {
        if (prev != nullptr) {
          prev[level] = x;
        }
        if (level == 0) {
          return next;
        }
        --level;
      }
    }
  }

  // The last page whose user key is < the given one (head_: none).
  Page* FindLessThan(const char* user, size_t n) const {
    Page* prev[kMaxHeight];
    FindGreaterOrEqual(user, n, prev);
    return prev[0];
  }

  // The last page (head_: none).
  Page* Last() const {
    Page* x = head_;
    int level = max_height_.load(std::memory_order_relaxed) - 1;
    while (true) {
      Page* next = x->Next(level);
      if (next != nullptr) {
        x = next;
      } else if (level == 0) {
        return x;
      } else {
        --level;
      }
    }
  }

  // The page's first entry whose tag is <= tag: its first key at or after (user key, tag).
  static Entry* AtOrAfter(const Page* p, uint64_t tag) {
    Entry* e = p->Head();
    while (e != nullptr && e->tag() > tag) {
      e = e->next.load(std::memory_order_acquire);
    }
    return e;
  }

 private:
  // A page node with its links and room for key_len bytes of key after them.
  Page* NewPage(int height, size_t key_len = 0) {
    char* mem = arena_.Allocate(sizeof(Page) + height * sizeof(std::atomic<Page*>) + key_len);
    auto* p = new (mem) Page;
    p->height = static_cast<uint16_t>(height);
    for (int i = 0; i < height; ++i) {
      new (&p->links()[i]) std::atomic<Page*>(nullptr);
    }
    return p;
  }

  int RandomHeight() {
    int h = 1;
    while (h < kMaxHeight) {
      rnd_ ^= rnd_ << 13;  // xorshift64
      rnd_ ^= rnd_ >> 7;
      rnd_ ^= rnd_ << 17;
      if ((rnd_ & 3) != 0) {
        break;
      }
      ++h;
    }
    return h;
  }

  void AddPage(Entry* first, const Parsed& k, size_t hash) {
    // The page keeps a copy of its key beside its links: the inserts and lookups of the page
    // compare it there instead of in the first entry, which is far away in the arena (and no
    // longer in the CPU's caches) once other entries have been added.
    Page* p = NewPage(RandomHeight(), k.user_len);
    char* key = reinterpret_cast<char*>(p->links() + p->height);
    std::memcpy(key, k.user, k.user_len);
    p->user = key;
    p->user_len = static_cast<uint32_t>(k.user_len);
    p->hash_tag = HashTag(hash);
    first->next.store(nullptr, std::memory_order_relaxed);
    p->head.store(first, std::memory_order_relaxed);
    p->newest_tag = k.tag;
    Page* prev[kMaxHeight];
    FindGreaterOrEqual(k.user, k.user_len, prev);
    const int max = max_height_.load(std::memory_order_relaxed);
    if (p->height > max) {
      for (int i = max; i < p->height; ++i) {
        prev[i] = head_;
      }
      // Readers that see the new height before the links find nullptr there and go down.
      max_height_.store(p->height, std::memory_order_relaxed);
    }
    for (int i = 0; i < p->height; ++i) {
      p->links()[i].store(prev[i]->links()[i].load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
      prev[i]->links()[i].store(p, std::memory_order_release);
    }
    std::atomic<Page*>& bucket = buckets_[hash & mask_];
    p->chain.store(bucket.load(std::memory_order_relaxed), std::memory_order_relaxed);
    bucket.store(p, std::memory_order_release);
    pages_.fetch_add(1, std::memory_order_relaxed);
  }

  const size_t mask_;
  // The hash table, shared with the factory while this is its newest memtable (see
  // PrefetchPageInserts); buckets_ is its array.
  std::shared_ptr<BucketArray> table_;
  std::atomic<Page*>* buckets_;
  NodeArena arena_;
  Page* head_ = nullptr;
  std::atomic<int> max_height_{1};
  uint64_t rnd_ = 0x9e3779b97f4a7c15ULL;
  std::atomic<uint64_t> pages_{0};
  std::atomic<uint64_t> entries_{0};
};

// ---- iterators ---------------------------------------------------------------------------------

// Iterators are made often (every scan of the memtable makes one), and RocksDB either deletes
// them or, for one it placed "in its arena", only runs the destructor. The storage of both
// kinds comes from a small per-thread free list: delete returns it there through the class's
// operator delete, and the destructor of an arena-mode iterator returns it itself. (The list is
// reached through a plain pointer, which stays usable while the thread's other thread_local
// objects are destroyed at its exit; after the list's own end, storage is freed at once.)
struct FreeIterators {
  static constexpr size_t kKept = 64;
  std::vector<void*> free;
};
thread_local FreeIterators* t_free_iterators = nullptr;
thread_local bool t_free_iterators_gone = false;
struct FreeIteratorsOwner {
  ~FreeIteratorsOwner() {
    if (t_free_iterators != nullptr) {
      for (void* p : t_free_iterators->free) {
        ::operator delete(p);
      }
      delete t_free_iterators;
      t_free_iterators = nullptr;
    }
    t_free_iterators_gone = true;
  }
};
thread_local FreeIteratorsOwner t_free_iterators_owner;

FreeIterators* ThreadFreeIterators() {
  if (t_free_iterators == nullptr && !t_free_iterators_gone) {
    (void)&t_free_iterators_owner;  // (constructs it, so that it runs at the thread's exit)
    t_free_iterators = new FreeIterators;
  }
  return t_free_iterators;
}

void* TakeIteratorStorage(size_t size) {
  FreeIterators* list = ThreadFreeIterators();
  if (list == nullptr || list->free.empty()) {
    return ::operator new(size);
  }
  void* p = list->free.back();
  list->free.pop_back();
  return p;
}

// from_destructor: p is the iterator whose destructor is running, so it cannot be freed here.
// A full list frees one of its kept buffers instead. Once the thread's list is gone (at the
// thread's exit), such a buffer is left until the process ends; RocksDB's iterators normally
// end before their thread does.
void GiveIteratorStorage(void* p, bool from_destructor) {
  FreeIterators* list = ThreadFreeIterators();
  if (list == nullptr) {
    if (!from_destructor) {
      ::operator delete(p);
    }
    return;
  }
  if (list->free.size() >= FreeIterators::kKept) {
    ::operator delete(list->free.back());
    list->free.pop_back();
  }
  list->free.push_back(p);
}

class PageIterator : public MemTableRep::Iterator {
 public:
  // whole: in key order over every page; otherwise a Seek finds one page (by hash) and the
  // iterator never leaves it (the "dynamic prefix" iterator, the prefix being the whole key).
  static PageIterator* Make(const PageRep* rep, bool whole, bool arena_mode) {
    void* mem = TakeIteratorStorage(sizeof(PageIterator));
    return new (mem) PageIterator(rep, whole, arena_mode);
  }
  PageIterator(const PageRep* rep, bool whole, bool arena_mode)
      : rep_(rep), whole_(whole), arena_mode_(arena_mode) {}
  ~PageIterator() override {
    if (arena_mode_) {
      GiveIteratorStorage(this, true);  // not deleted by RocksDB: the storage goes back here
    }
  }
  static void operator delete(void* p) { GiveIteratorStorage(p, false); }

  bool Valid() const override { return entry_ != nullptr; }
  const char* key() const override { return entry_->key(); }

  // A flush walks every entry, each far from the last in the arena: the CPU is asked for the
  // next entry of the page one step ahead, and for the next page's first entry and the page after
  // it when a page is entered, so that their misses overlap the caller's work.
  void Next() override {
    entry_ = entry_->next.load(std::memory_order_acquire);
    if (entry_ == nullptr) {
      page_ = whole_ ? page_->Next(0) : nullptr;
      entry_ = page_ != nullptr ? page_->Head() : nullptr;
      if (page_ != nullptr) {
        // (the next page's node was asked for when this one was entered)
        if (Page* next_page = page_->Next(0); next_page != nullptr) {
          Prefetch(next_page->Head());
          Prefetch(next_page->Next(0));
        }
      }
    }
    if (entry_ != nullptr) {
      Prefetch(entry_->next.load(std::memory_order_relaxed));
    }
  }

  void Prev() override {
    Entry* e = page_->Head();
    if (e == entry_) {
      Page* p = whole_ ? rep_->FindLessThan(page_->user, page_->user_len) : rep_->head();
      SetLastOf(p);
      return;
    }
    // entry_ stays in the list, so the walk reaches the entry just before it.
    for (Entry* n = e->next.load(std::memory_order_acquire); n != entry_;
         n = e->next.load(std::memory_order_acquire)) {
      e = n;
    }
    entry_ = e;
  }

  void Seek(const Slice& internal_key, const char* memtable_key) override {
    const Parsed t = Target(internal_key, memtable_key);
    // A key of a page that is in the memtable: straight there.
    Page* p = rep_->Find(t.user, t.user_len, HashUser(t.user, t.user_len));
    if (p != nullptr) {
      Entry* e = PageRep::AtOrAfter(p, t.tag);
      if (e != nullptr) {
        page_ = p;
        entry_ = e;
        return;
      }
      if (!whole_) {
        Invalidate();
        return;
      }
      SetFirstOf(p->Next(0));  // every entry of p is newer than the target
      return;
    }
    if (!whole_) {
      Invalidate();
      return;
    }
    SetFirstOf(rep_->FindGreaterOrEqual(t.user, t.user_len, nullptr));
  }

  void SeekForPrev(const Slice& internal_key, const char* memtable_key) override {
    const Parsed t = Target(internal_key, memtable_key);
    Seek(internal_key, memtable_key);
    if (!Valid()) {
      if (whole_) {
        SeekToLast();
      } else {
        Page* p = rep_->Find(t.user, t.user_len, HashUser(t.user, t.user_len));
        if (p != nullptr) {
          SetLastOf(p);
        }
      }
      return;
    }
    const int c = CompareUser(page_->user, page_->user_len, t.user, t.user_len);
    if (c > 0 || (c == 0 && entry_->tag() < t.tag)) {
      Prev();  // past the target: the entry before it is the last one <= target
    }
  }

  void SeekToFirst() override { SetFirstOf(rep_->head()->Next(0)); }

  void SeekToLast() override { SetLastOf(rep_->Last()); }

 private:
  // The first two cache lines of an entry or a page node (nullptr: nothing).
  static void Prefetch(const void* p) {
    if (p != nullptr) {
      __builtin_prefetch(p);
      __builtin_prefetch(static_cast<const char*>(p) + 64);
    }
  }

  static Parsed Target(const Slice& internal_key, const char* memtable_key) {
    return memtable_key != nullptr ? ParseMemtableKey(memtable_key)
                                   : ParseInternal(internal_key.data(), internal_key.size());
  }

  void Invalidate() {
    page_ = nullptr;
    entry_ = nullptr;
  }

  // The first entry of p (nullptr: past the end).
  void SetFirstOf(Page* p) {
    page_ = p;
    entry_ = p != nullptr ? p->Head() : nullptr;
  }

  // The last entry of p (head_ or nullptr: before the beginning).
  void SetLastOf(Page* p) {
    if (p == nullptr || p == rep_->head()) {
      Invalidate();
      return;
    }
    page_ = p;
    Entry* e = p->Head();
    for (Entry* n = e->next.load(std::memory_order_acquire); n != nullptr;
         n = e->next.load(std::memory_order_acquire)) {
      e = n;
    }
    entry_ = e;
  }

  const PageRep* rep_;
  const bool whole_;
  const bool arena_mode_;
  Page* page_ = nullptr;
  Entry* entry_ = nullptr;
};

MemTableRep::Iterator* PageRep::GetIterator(rocksdb::Arena* arena) {
  return PageIterator::Make(this, true, arena != nullptr);
}

// The per-thread iterator of point reads: its storage is the thread's, never freed.
class PointReadIterator final : public PageIterator {
 public:
  explicit PointReadIterator(const PageRep* rep) : PageIterator(rep, false, false) {}
  static void operator delete(void* /*p*/) {}
};

MemTableRep::Iterator* PageRep::GetDynamicPrefixIterator(rocksdb::Arena* arena) {
  if (arena != nullptr) {
    return PageIterator::Make(this, false, true);
  }
  alignas(PointReadIterator) thread_local unsigned char storage[sizeof(PointReadIterator)];
  return new (storage) PointReadIterator(this);
}

class PageMemTableFactory final : public rocksdb::MemTableRepFactory {
 public:
  explicit PageMemTableFactory(size_t write_buffer_bytes)
      : buckets_(std::bit_ceil(std::max<size_t>(1024, write_buffer_bytes / 256))),
        block_(std::clamp<size_t>(write_buffer_bytes / 64, 4096, 1 << 20)) {}

  using MemTableRepFactory::CreateMemTableRep;
  MemTableRep* CreateMemTableRep(const MemTableRep::KeyComparator& /*cmp*/,
                                 rocksdb::Allocator* allocator,
                                 const rocksdb::SliceTransform* /*transform*/,
                                 rocksdb::Logger* /*logger*/) override {
    auto table = std::make_shared<BucketArray>(buckets_);
    {
      std::lock_guard lock(newest_mu_);
      newest_ = table;  // (RocksDB makes a memtable when it starts writing into it)
    }
    return new PageRep(allocator, std::move(table), block_);
  }
  // The hash table of the memtable made last (kept alive by the caller's reference).
  std::shared_ptr<BucketArray> Newest() const {
    std::lock_guard lock(newest_mu_);
    return newest_;
  }
  const char* Name() const override { return "cuckood.PageMemTable"; }
  bool IsInsertConcurrentlySupported() const override { return false; }
  bool CanHandleDuplicatedKey() const override { return true; }  // InsertKey says false

 private:
  const size_t buckets_;
  const size_t block_;
  mutable std::mutex newest_mu_;
  std::shared_ptr<BucketArray> newest_;
};

// Collects the user keys of a write batch's entries of some column families (keys[i]: those
// of cfs[i]).
class KeysOf final : public rocksdb::WriteBatch::Handler {
 public:
  KeysOf(std::span<const uint32_t> cfs, std::vector<rocksdb::Slice>* keys)
      : cfs_(cfs), keys_(keys) {}
  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key, const rocksdb::Slice&) override {
    Add(cf, key);
    return rocksdb::Status::OK();
  }
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& key, const rocksdb::Slice&) override {
    Add(cf, key);
    return rocksdb::Status::OK();
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
    Add(cf, key);
    return rocksdb::Status::OK();
  }

 private:
  void Add(uint32_t cf, const rocksdb::Slice& key) {
    for (size_t i = 0; i < cfs_.size(); ++i) {
      if (cf == cfs_[i]) {
        keys_[i].push_back(key);
        return;
      }
    }
  }
  std::span<const uint32_t> cfs_;
  std::vector<rocksdb::Slice>* keys_;
};

}  // namespace

void PrefetchPageInserts(std::span<const MemTableTarget> targets,
                         const rocksdb::WriteBatch& batch) {
  constexpr size_t kMaxTargets = 2;
  std::shared_ptr<BucketArray> tables[kMaxTargets];
  uint32_t cfs[kMaxTargets];
  size_t n = 0;
  for (const MemTableTarget& t : targets) {
    const auto* rep = dynamic_cast<const PageMemTableFactory*>(t.factory);
    if (rep != nullptr && n < kMaxTargets) {
      if (auto table = rep->Newest()) {
        tables[n] = std::move(table);
        cfs[n++] = t.cf;
      }
    }
  }
  if (n == 0) {
    return;
  }
  thread_local std::vector<rocksdb::Slice> keys[kMaxTargets];
  thread_local std::vector<size_t> slots;
  for (size_t t = 0; t < n; ++t) {
    keys[t].clear();
  }
  KeysOf collect(std::span<const uint32_t>(cfs, n), keys);
  if (!batch.Iterate(&collect).ok()) {
    return;
  }
  // First every key's bucket, then the first page chained in each (its node holds the key):
  // the inserts that follow find both in the CPU's caches, their misses having overlapped here.
  // Only prefetches: a page node of a memtable replaced meanwhile is never read.
  for (size_t t = 0; t < n; ++t) {
    const BucketArray& table = *tables[t];
    slots.resize(keys[t].size());
    for (size_t i = 0; i < keys[t].size(); ++i) {
      slots[i] = HashUser(keys[t][i].data(), keys[t][i].size()) & table.mask;
      __builtin_prefetch(&table.slots[slots[i]]);
    }
    for (size_t i = 0; i < keys[t].size(); ++i) {
      const Page* p = table.slots[slots[i]].load(std::memory_order_relaxed);
      if (p != nullptr) {
        __builtin_prefetch(p);
        __builtin_prefetch(reinterpret_cast<const char*>(p) + 64);
      }
    }
  }
}

std::shared_ptr<rocksdb::MemTableRepFactory> NewPageMemTableFactory(size_t write_buffer_bytes) {
  return std::make_shared<PageMemTableFactory>(write_buffer_bytes);
}

}  // namespace cuckood::storage

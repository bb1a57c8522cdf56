#include "storage/buffer_pool.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "core/sanitizers.h"

namespace cuckood::storage {

namespace {

// Not in sanitized builds: ThreadSanitizer does not model the fence in RecycleValue (it reported
// the reuse of a value whose last other owner had read it and then dropped its reference as a
// race), and AddressSanitizer should see every buffer freed.
constexpr bool kPools = !core::kSanitized;

// ---- page buffers ----------------------------------------------------------------------------

// A thread's kept strings. t_pages_gone is set when the thread's pool has been destroyed (at
// thread exit), after which nothing is kept.
struct PagePool {
  std::vector<std::string> kept;
  ~PagePool();
};
thread_local bool t_pages_gone = false;

PagePool* Pages() {
  if (t_pages_gone) {
    return nullptr;
  }
  static thread_local PagePool pool;
  return &pool;
}

PagePool::~PagePool() {
  t_pages_gone = true;
}

// ---- RocksDB's blocks -------------------------------------------------------------------------

// Every buffer starts with a 16-byte header holding its class; the caller's bytes follow.
constexpr size_t kHeader = 16;
constexpr uint8_t kMalloced = 0xff;
constexpr size_t kClassBytes[2] = {4352, kBlockPoolMax};  // a 4 KiB block with its trailer; 8 KiB
constexpr size_t kBlockPoolMin = 1024;                    // smaller ones: malloc's own cache

struct FreeBlock {
  FreeBlock* next;
};
// Trivially destructible, so that it is usable until the thread's very end; BlockReaper frees
// what it holds when the thread exits.
struct BlockLists {
  FreeBlock* head[2];
  size_t count[2];
  bool gone;
};
thread_local BlockLists t_blocks{};

struct BlockReaper {
  ~BlockReaper() {
    for (int c = 0; c < 2; ++c) {
      while (FreeBlock* b = t_blocks.head[c]) {
        t_blocks.head[c] = b->next;
        std::free(reinterpret_cast<char*>(b) - kHeader);
      }
      t_blocks.count[c] = 0;
    }
    t_blocks.gone = true;
  }
};

void ArmReaper() {
  static thread_local BlockReaper reaper;
  (void)reaper;
}

class BlockAllocator final : public rocksdb::MemoryAllocator {
 public:
  const char* Name() const override { return "cuckood.BlockAllocator"; }

  void* Allocate(size_t size) override {
    uint8_t cls = kMalloced;
    size_t bytes = size;
    if (kPools && size >= kBlockPoolMin && size <= kBlockPoolMax) {
      cls = size <= kClassBytes[0] ? 0 : 1;
      bytes = kClassBytes[cls];
      BlockLists& t = t_blocks;
      if (FreeBlock* b = t.head[cls]) {
        t.head[cls] = b->next;
        --t.count[cls];
        return b;
      }
    }
    void* raw = std::malloc(kHeader + bytes);
    if (raw == nullptr) {
      throw std::bad_alloc();
    }
    *static_cast<uint8_t*>(raw) = cls;
    return static_cast<char*>(raw) + kHeader;
  }

  void Deallocate(void* p) override {
    if (p == nullptr) {
      return;
    }
    char* raw = static_cast<char*>(p) - kHeader;
    const uint8_t cls = *reinterpret_cast<uint8_t*>(raw);
    if (cls != kMalloced) {
      BlockLists& t = t_blocks;
      if (!t.gone && t.count[cls] < kKeptBlocks[cls]) {
        ArmReaper();
        auto* b = static_cast<FreeBlock*>(p);
        b->next = t.head[cls];
        t.head[cls] = b;
        ++t.count[cls];
        return;
      }
    }
    std::free(raw);
  }

  size_t UsableSize(void* p, size_t allocation_size) const override {
    const uint8_t cls = *(static_cast<uint8_t*>(p) - kHeader);
    return cls == kMalloced ? allocation_size : kClassBytes[cls];
  }
};

}  // namespace

bool BufferPoolsEnabled() {
  return kPools;
}

std::string PageBuffer(std::string_view bytes) {
  std::string s = EmptyPageBuffer();
  s.assign(bytes);
  return s;
}

std::string EmptyPageBuffer() {
  std::string s;
  if (PagePool* pool = Pages(); pool != nullptr && !pool->kept.empty()) {
    s = std::move(pool->kept.back());
    pool->kept.pop_back();
    s.clear();
  }
  return s;
}

void RecyclePageBuffer(std::string&& s) {
  const size_t cap = s.capacity();
  if (kPools && cap >= kPageBufferMin && cap <= kPageBufferMax) {
    if (PagePool* pool = Pages(); pool != nullptr && pool->kept.size() < kKeptPageBuffers) {
      if (pool->kept.capacity() == 0) {
        pool->kept.reserve(kKeptPageBuffers);
      }
      pool->kept.push_back(std::move(s));
      return;
    }
  }
  std::string().swap(s);
}

void RecycleValue(std::shared_ptr<const std::string>&& value) {
  std::shared_ptr<const std::string> v = std::move(value);
  if (!kPools || !v || v.use_count() != 1) {
    return;  // (someone else still reads it, or nothing is kept: freed by the last owner)
  }
  const size_t cap = v->capacity();
  if (cap < kPageBufferMin || cap > kPageBufferMax) {
    return;
  }
  // The only owner: whoever held the other references has dropped them, and their reads of the
  // bytes happened before their release of the count, which the load above read; this fence
  // orders that before the bytes are written again.
  std::atomic_thread_fence(std::memory_order_acquire);
  RecyclePageBuffer(std::move(const_cast<std::string&>(*v)));
}

size_t KeptPageBuffers() {
  PagePool* pool = Pages();
  return pool == nullptr ? 0 : pool->kept.size();
}

std::shared_ptr<rocksdb::MemoryAllocator> NewBlockAllocator() {
  return std::make_shared<BlockAllocator>();
}

}  // namespace cuckood::storage

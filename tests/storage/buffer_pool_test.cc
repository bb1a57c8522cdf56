#include "storage/buffer_pool.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/mem_cache.h"

namespace cuckood::storage {
namespace {

// Empties this thread's kept page buffers.
void DrainPageBuffers() {
  while (KeptPageBuffers() > 0) {
    (void)EmptyPageBuffer();
  }
}

TEST_CASE("Page buffers: a recycled buffer is handed out again, empty", "[buffer_pool]") {
  DrainPageBuffers();
  std::string page(2048, 'a');
  const char* data = page.data();
  RecyclePageBuffer(std::move(page));
  CHECK(page.empty());  // NOLINT(bugprone-use-after-move): left empty either way
  if (!BufferPoolsEnabled()) {
    CHECK(KeptPageBuffers() == 0);
    return;
  }
  REQUIRE(KeptPageBuffers() == 1);
  std::string again = EmptyPageBuffer();
  CHECK(again.empty());
  CHECK(again.capacity() >= 2048);
  CHECK(again.data() == data);
  CHECK(KeptPageBuffers() == 0);

  // PageBuffer copies the bytes into it.
  RecyclePageBuffer(std::move(again));
  std::string copy = PageBuffer(std::string(2048, 'z'));
  CHECK(copy == std::string(2048, 'z'));
  CHECK(copy.data() == data);
  // With nothing kept, a plain string.
  std::string fresh = PageBuffer("abc");
  CHECK(fresh == "abc");
}

TEST_CASE("Page buffers: only page-sized buffers are kept, and at most kKeptPageBuffers",
          "[buffer_pool]") {
  DrainPageBuffers();
  RecyclePageBuffer(std::string("small"));
  std::string huge(64 * 1024, 'h');
  RecyclePageBuffer(std::move(huge));
  CHECK(KeptPageBuffers() == 0);
  for (size_t i = 0; i < kKeptPageBuffers + 10; ++i) {
    RecyclePageBuffer(std::string(2048, 'x'));
  }
  CHECK(KeptPageBuffers() == (BufferPoolsEnabled() ? kKeptPageBuffers : 0));
  // Buffers kept by another thread are not this thread's, and its exit frees them.
  std::thread([] {
    CHECK(KeptPageBuffers() == 0);
    RecyclePageBuffer(std::string(2048, 'y'));
    CHECK(KeptPageBuffers() == (BufferPoolsEnabled() ? 1 : 0));
  }).join();
  CHECK(KeptPageBuffers() == (BufferPoolsEnabled() ? kKeptPageBuffers : 0));
  DrainPageBuffers();
}

TEST_CASE("Page buffers: a value is recycled only by its last owner", "[buffer_pool]") {
  DrainPageBuffers();
  std::shared_ptr<const std::string> a = std::make_shared<std::string>(2048, 'a');
  std::shared_ptr<const std::string> other = a;
  RecycleValue(std::move(a));
  CHECK(a == nullptr);
  CHECK(KeptPageBuffers() == 0);
  CHECK(*other == std::string(2048, 'a'));  // the other owner's bytes are untouched
  const char* data = other->data();
  RecycleValue(std::move(other));
  if (BufferPoolsEnabled()) {
    REQUIRE(KeptPageBuffers() == 1);
    CHECK(EmptyPageBuffer().data() == data);
  }
  // Metadata-sized values and absent ones are never kept.
  RecycleValue(std::make_shared<std::string>("meta"));
  RecycleValue(nullptr);
  CHECK(KeptPageBuffers() == 0);
}

TEST_CASE("Page buffers: the in-memory cache recycles what it drops and nobody else holds",
          "[buffer_pool][mem_cache]") {
  DrainPageBuffers();
  MemCache cache(1 << 20, 1);
  cache.Put("k", std::make_shared<std::string>(2048, '1'));
  MemCache::Value held;
  REQUIRE(cache.GetShared("k", &held));
  cache.Put("k", std::make_shared<std::string>(2048, '2'));
  CHECK(KeptPageBuffers() == 0);  // `held` still reads the old bytes
  CHECK(*held == std::string(2048, '1'));
  held.reset();
  cache.Put("k", std::make_shared<std::string>(2048, '3'));  // drops '2', held by nobody
  CHECK(KeptPageBuffers() == (BufferPoolsEnabled() ? 1 : 0));
  REQUIRE(cache.GetShared("k", &held));
  CHECK(*held == std::string(2048, '3'));
  DrainPageBuffers();

  // Evicted values: the cache holds ~40 pages; 400 go through it.
  MemCache small(40 * 2200, 1);
  for (int i = 0; i < 400; ++i) {
    small.Put("p" + std::to_string(i),
              std::make_shared<std::string>(2048, static_cast<char>('a' + i % 26)));
  }
  for (int i = 360; i < 400; ++i) {
    MemCache::Value v;
    if (small.GetShared("p" + std::to_string(i), &v)) {
      CHECK(*v == std::string(2048, static_cast<char>('a' + i % 26)));
    }
  }
  if (BufferPoolsEnabled()) {
    // 360 evicted, freed in batches once no reader can still borrow them: their buffers came
    // back.
    CHECK(KeptPageBuffers() >= 256);
  }
  DrainPageBuffers();
}

TEST_CASE("Block allocator: buffers of each size class are reused; large ones are not",
          "[buffer_pool]") {
  auto alloc = NewBlockAllocator();
  std::set<void*> seen;
  std::vector<void*> live;
  for (size_t size : {size_t{1024}, size_t{4096}, size_t{4101}, size_t{4352}, size_t{5000},
                      size_t{8192}, size_t{100}, size_t{8193}, size_t{1 << 20}}) {
    void* p = alloc->Allocate(size);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(p) % 16 == 0);
    const size_t usable = alloc->UsableSize(p, size);
    CHECK(usable >= size);
    std::memset(p, 0x5a, usable);  // the whole usable size is writable
    live.push_back(p);
  }
  for (void* p : live) {
    alloc->Deallocate(p);
  }
  // A 4 KiB block's buffer comes back for the next block of that class.
  void* a = alloc->Allocate(4000);
  alloc->Deallocate(a);
  void* b = alloc->Allocate(4200);
  if (BufferPoolsEnabled()) {
    CHECK(a == b);
    CHECK(alloc->UsableSize(b, 4200) >= 4352);
  }
  alloc->Deallocate(b);
  alloc->Deallocate(nullptr);

  // Freed on another thread than the one that allocated, and that thread exits.
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) {
    blocks.push_back(alloc->Allocate(i % 2 == 0 ? 4100 : 6000));
  }
  std::thread([&] {
    for (void* p : blocks) {
      std::memset(p, 1, 4100);
      alloc->Deallocate(p);
    }
    for (int i = 0; i < 100; ++i) {
      void* p = alloc->Allocate(4100);
      std::memset(p, 2, 4100);
      alloc->Deallocate(p);
    }
  }).join();
}

}  // namespace
}  // namespace cuckood::storage

// Striped key locks (storage/locks.h): LockGuard sorts and de-duplicates stripes, so writers that
// name overlapping keys in any order never deadlock.
#include "storage/locks.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

using namespace cuckood::storage;

namespace {

// Whether another thread can take stripe i right now (a std::mutex may not be try-locked by the
// thread that holds it).
bool LockableFromOtherThread(LockManager& mgr, size_t i) {
  return std::async(std::launch::async,
                    [&mgr, i] {
                      if (!mgr.stripe(i).try_lock()) {
                        return false;
                      }
                      mgr.stripe(i).unlock();
                      return true;
                    })
      .get();
}

// Runs fn on a detached thread and waits at most `limit` for it; false when it did not finish
// (a deadlock). The state is shared so that a stuck thread never touches freed memory.
template <typename Fn>
bool FinishesWithin(std::chrono::seconds limit, Fn fn) {
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  std::thread([done, fn = std::move(fn)]() mutable {
    fn();
    done->set_value();
  }).detach();
  return future.wait_for(limit) == std::future_status::ready;
}

}  // namespace

TEST_CASE("LockManager maps keys to stripes deterministically", "[locks]") {
  LockManager mgr(16);
  CHECK(mgr.stripes() == 16);
  CHECK(mgr.StripeOf(0, "a") == mgr.StripeOf(0, "a"));
  bool ns_matters = false;
  bool spread = false;
  for (int i = 0; i < 64; ++i) {
    const std::string key = "key" + std::to_string(i);
    CHECK(mgr.StripeOf(0, key) < 16);
    ns_matters |= mgr.StripeOf(0, key) != mgr.StripeOf(1, key);
    spread |= mgr.StripeOf(0, key) != mgr.StripeOf(0, "key0");
  }
  CHECK(ns_matters);
  CHECK(spread);
  SECTION("zero stripes means one") {
    LockManager one(0);
    CHECK(one.stripes() == 1);
    CHECK(one.StripeOf(3, "x") == 0);
  }
}

TEST_CASE("LockGuard holds the sorted, de-duplicated set of stripes", "[locks]") {
  LockManager mgr(8);
  SECTION("duplicates are taken once and released once") {
    // A duplicate taken twice would self-deadlock on std::mutex.
    auto mgr_ptr = std::make_shared<LockManager>(8);
    auto holds = std::make_shared<std::vector<bool>>();
    REQUIRE(FinishesWithin(std::chrono::seconds(10), [mgr_ptr, holds] {
      LockGuard g(mgr_ptr.get(), {5, 3, 5, 1, 3, 3});
      for (size_t i = 0; i < 8; ++i) {
        holds->push_back(g.holds(i));
      }
    }));
    CHECK(*holds == std::vector<bool>{false, true, false, true, false, true, false, false});
    for (size_t i = 0; i < 8; ++i) {
      CHECK(LockableFromOtherThread(*mgr_ptr, i));
    }
  }
  SECTION("the stripes are locked while the guard lives and free afterwards") {
    {
      LockGuard g(&mgr, {6, 2});
      CHECK(g.holds(2));
      CHECK(g.holds(6));
      CHECK_FALSE(g.holds(3));
      CHECK_FALSE(LockableFromOtherThread(mgr, 2));
      CHECK_FALSE(LockableFromOtherThread(mgr, 6));
      CHECK(LockableFromOtherThread(mgr, 3));
    }
    CHECK(LockableFromOtherThread(mgr, 2));
    CHECK(LockableFromOtherThread(mgr, 6));
  }
  SECTION("Release frees early and is idempotent") {
    LockGuard g(&mgr, {4});
    g.Release();
    CHECK_FALSE(g.holds(4));
    CHECK(LockableFromOtherThread(mgr, 4));
    g.Release();
    CHECK(LockableFromOtherThread(mgr, 4));
  }
  SECTION("a move transfers ownership; the moved-from guard unlocks nothing") {
    LockGuard outer;
    {
      LockGuard g(&mgr, {1, 7});
      outer = std::move(g);
      CHECK_FALSE(g.holds(1));  // NOLINT(bugprone-use-after-move): documented state
    }
    CHECK(outer.holds(1));
    CHECK(outer.holds(7));
    CHECK_FALSE(LockableFromOtherThread(mgr, 1));
    CHECK_FALSE(LockableFromOtherThread(mgr, 7));
    LockGuard moved(std::move(outer));
    CHECK(moved.holds(7));
    CHECK_FALSE(LockableFromOtherThread(mgr, 7));
    moved.Release();
    CHECK(LockableFromOtherThread(mgr, 1));
    CHECK(LockableFromOtherThread(mgr, 7));
  }
  SECTION("move-assigning over a guard releases what it held") {
    LockGuard a(&mgr, {0});
    LockGuard b(&mgr, {5});
    a = std::move(b);
    CHECK(LockableFromOtherThread(mgr, 0));
    CHECK_FALSE(LockableFromOtherThread(mgr, 5));
    CHECK(a.holds(5));
    CHECK_FALSE(a.holds(0));
  }
}

TEST_CASE("Writers locking overlapping stripes in opposite orders never deadlock", "[locks]") {
  constexpr int kRounds = 20000;
  auto mgr = std::make_shared<LockManager>(8);
  // Guarded by stripe 3, which every writer takes; a lost update would show a torn count.
  auto counter = std::make_shared<long>(0);
  auto finished = std::make_shared<std::atomic<int>>(0);
  auto worker = [mgr, counter, finished](std::vector<size_t> stripes) {
    return [mgr, counter, finished, stripes] {
      for (int i = 0; i < kRounds; ++i) {
        LockGuard g(mgr.get(), stripes);
        ++*counter;
      }
      ++*finished;
    };
  };
  const bool a = FinishesWithin(std::chrono::seconds(60), [worker] {
    // Both threads run concurrently inside this one; each would deadlock the other without
    // the sort.
    std::thread t1(worker({1, 3, 5, 7}));
    std::thread t2(worker({7, 5, 3, 1}));
    std::thread t3(worker({5, 3, 3, 2}));
    t1.join();
    t2.join();
    t3.join();
  });
  REQUIRE(a);
  CHECK(finished->load() == 3);
  CHECK(*counter == 3L * kRounds);
}

TEST_CASE("A guard grows by stripes it can take without waiting, or not at all", "[locks]") {
  LockManager mgr(16);
  LockGuard g(&mgr, {2, 9});
  CHECK(g.covers({2}));
  CHECK(g.covers({2, 9}));
  CHECK_FALSE(g.covers({2, 4}));
  SECTION("free stripes are added, in order, and released with the guard") {
    REQUIRE(g.TryAdd({1, 9, 12}));
    CHECK(g.size() == 4);
    CHECK(g.covers({1, 2, 9, 12}));
    CHECK_FALSE(mgr.stripe(12).try_lock_shared());
    g.Release();
    REQUIRE(mgr.stripe(12).try_lock());
    mgr.stripe(12).unlock();
  }
  SECTION("stripes added below, between and above the held ones keep the list sorted") {
    REQUIRE(g.TryAdd({0, 5, 10, 15}));
    REQUIRE(g.TryAdd({3, 4}));
    CHECK(g.size() == 8);
    CHECK(g.covers({0, 2, 3, 4, 5, 9, 10, 15}));
    CHECK(g.holds(0));
    CHECK(g.holds(15));
    CHECK_FALSE(g.holds(1));
    g.Release();
    for (size_t s : {0, 2, 3, 4, 5, 9, 10, 15}) {
      REQUIRE(mgr.stripe(s).try_lock());  // (every one given back)
      mgr.stripe(s).unlock();
    }
  }
  SECTION("a busy stripe leaves the guard as it was, the others not taken") {
    mgr.stripe(7).lock_shared();  // a reader elsewhere
    CHECK_FALSE(g.TryAdd({3, 7}));
    CHECK(g.size() == 2);
    CHECK_FALSE(g.holds(3));
    REQUIRE(mgr.stripe(3).try_lock());  // (not left locked by the failed attempt)
    mgr.stripe(3).unlock();
    mgr.stripe(7).unlock_shared();
  }
  SECTION("a shared guard grows shared: other readers still get in") {
    auto r = LockGuard::TryShared(&mgr, {5});
    REQUIRE(r);
    REQUIRE(r->TryAdd({6}));
    REQUIRE(mgr.stripe(6).try_lock_shared());
    mgr.stripe(6).unlock_shared();
    CHECK_FALSE(mgr.stripe(6).try_lock());
  }
}

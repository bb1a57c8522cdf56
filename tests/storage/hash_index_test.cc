#include "storage/hash_index.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cuckood::storage {
namespace {

// Values are pointers to keys owned by the test (as MemCache's are list iterators).
struct KeyOfPtr {
  std::string_view operator()(const std::string* p) const { return *p; }
};
using Index = HashIndex<const std::string*, KeyOfPtr>;

// Drives the index and a std::map with the same random operations and checks that they agree
// after each one. hash_of decides the hashes, so that tests can make them collide.
template <class HashOf>
void CheckAgainstMap(HashOf hash_of, size_t keys, size_t steps, uint32_t seed) {
  std::vector<std::unique_ptr<std::string>> owned;
  for (size_t i = 0; i < keys; ++i) {
    owned.push_back(std::make_unique<std::string>("key-" + std::to_string(i)));
  }
  Index index;
  std::map<std::string, const std::string*> model;
  std::mt19937 rng(seed);
  for (size_t step = 0; step < steps; ++step) {
    const std::string* k = owned[rng() % keys].get();
    const uint64_t h = hash_of(*k);
    const bool present = model.count(*k) != 0;
    switch (rng() % 3) {
      case 0:
        if (!present) {
          index.Insert(h, k);
          model[*k] = k;
        }
        break;
      case 1:
        REQUIRE(index.Erase(h, *k) == present);
        model.erase(*k);
        break;
      default:
        break;
    }
    REQUIRE(index.size() == model.size());
    // Every key: found exactly when the model has it, and then with its own value.
    if (step % 64 == 0 || step + 1 == steps) {
      for (const auto& o : owned) {
        const std::string** found = index.Find(hash_of(*o), *o);
        if (model.count(*o) != 0) {
          REQUIRE(found != nullptr);
          REQUIRE(*found == o.get());
        } else {
          REQUIRE(found == nullptr);
        }
      }
    }
  }
}

TEST_CASE("HashIndex: finds, inserts and erases as a map does", "[hash_index]") {
  CheckAgainstMap([](std::string_view k) { return Index::Hash(k); }, 500, 20000, 1);
}

TEST_CASE("HashIndex: keys whose hashes are equal are told apart by their keys", "[hash_index]") {
  // Four distinct hashes for 300 keys: long runs of equal hashes, erased from the middle.
  CheckAgainstMap([](std::string_view k) { return Index::Hash(k.substr(0, 4)) ^ (k.size() % 4); },
                  300, 20000, 2);
}

TEST_CASE("HashIndex: runs that wrap around the end of the table", "[hash_index]") {
  // Hashes whose home slots are the last ones of the table (every table size is a power of 2):
  // the probe runs wrap to slot 0, and erasing must shift entries across the end.
  CheckAgainstMap(
      [](std::string_view k) {
        const uint64_t low = std::hash<std::string_view>{}(k) % 3;  // 0, 1, 2
        return (uint64_t{1} << 63) | (~uint64_t{0} >> 1 & ~uint64_t{3}) | (low + 1);
      },
      40, 20000, 3);
}

TEST_CASE("HashIndex: Clear empties it and it fills again", "[hash_index]") {
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) {
    keys.push_back("k" + std::to_string(i));
  }
  Index index;
  for (const auto& k : keys) {
    index.Insert(Index::Hash(k), &k);
  }
  REQUIRE(index.size() == 100);
  index.Clear();
  CHECK(index.size() == 0);
  for (const auto& k : keys) {
    CHECK(index.Find(Index::Hash(k), k) == nullptr);
  }
  index.Insert(Index::Hash(keys[7]), &keys[7]);
  REQUIRE(index.Find(Index::Hash(keys[7]), keys[7]) != nullptr);
  CHECK(*index.Find(Index::Hash(keys[7]), keys[7]) == &keys[7]);
  CHECK(index.Find(Index::Hash(keys[8]), keys[8]) == nullptr);
}

}  // namespace
}  // namespace cuckood::storage

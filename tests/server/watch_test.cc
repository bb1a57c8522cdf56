// WATCH's registry (server/watch.h): counters exist only for watched keys, a touch moves them,
// and a database's keys are told apart from another's.
#include "server/watch.h"

#include <catch2/catch.hpp>

#include "server/client.h"

using cuckood::server::Client;
using cuckood::server::WatchRegistry;

TEST_CASE("a touch changes the counter of a watched key only", "[watch]") {
  WatchRegistry w;
  Client c;
  const uint64_t v = w.Watch(0, "k");
  c.watched.emplace_back(WatchRegistry::Id(0, "k"), v);
  CHECK(w.Version(WatchRegistry::Id(0, "k")) == v);
  w.Touch(0, {"other"});
  CHECK(w.Version(WatchRegistry::Id(0, "k")) == v);
  w.Touch(1, {"k"});  // the same name in another database
  CHECK(w.Version(WatchRegistry::Id(0, "k")) == v);
  w.Touch(0, {"k"});
  CHECK(w.Version(WatchRegistry::Id(0, "k")) != v);
  w.UnwatchAll(c);
  CHECK(c.watched.empty());
  CHECK(w.Version(WatchRegistry::Id(0, "k")) == UINT64_MAX);  // nobody watches it any more
}

TEST_CASE("TouchAll touches one database or all, and Keys lists a database's keys", "[watch]") {
  WatchRegistry w;
  const uint64_t a = w.Watch(0, "a");
  const uint64_t b = w.Watch(1, "b");
  CHECK(w.Keys(0) == std::vector<std::string>{"a"});
  CHECK(w.Keys(1) == std::vector<std::string>{"b"});
  CHECK(w.Keys(2).empty());
  w.TouchAll(1);
  CHECK(w.Version(WatchRegistry::Id(0, "a")) == a);
  CHECK(w.Version(WatchRegistry::Id(1, "b")) != b);
  w.TouchAll();
  CHECK(w.Version(WatchRegistry::Id(0, "a")) != a);
}

TEST_CASE("a key watched by two clients stays watched until both unwatch", "[watch]") {
  WatchRegistry w;
  Client one;
  Client two;
  one.watched.emplace_back(WatchRegistry::Id(0, "k"), w.Watch(0, "k"));
  two.watched.emplace_back(WatchRegistry::Id(0, "k"), w.Watch(0, "k"));
  w.UnwatchAll(one);
  CHECK(w.Version(WatchRegistry::Id(0, "k")) != UINT64_MAX);
  w.UnwatchAll(two);
  CHECK(w.Version(WatchRegistry::Id(0, "k")) == UINT64_MAX);
}

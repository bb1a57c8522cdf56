// The slow log (server/slowlog.h): newest first, bounded, arguments cut as Redis cuts them.
#include "server/slowlog.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "server/client.h"

using cuckood::server::Client;
using cuckood::server::Slowlog;

TEST_CASE("the slow log keeps the newest max_len entries, newest first", "[slowlog]") {
  Slowlog log;
  Client c;
  c.addr = "127.0.0.1:5000";
  c.name = "worker";
  for (int i = 0; i < 5; ++i) {
    const std::string arg = std::to_string(i);
    log.Add(c, {"CF.ADD", "k", arg}, 100 + i, /*max_len=*/3);
  }
  CHECK(log.Len() == 3);
  auto all = log.Get(-1);
  REQUIRE(all.size() == 3);
  CHECK(all[0].argv == std::vector<std::string>{"CF.ADD", "k", "4"});
  CHECK(all[0].micros == 104);
  CHECK(all[0].id == 4);
  CHECK(all[2].id == 2);
  CHECK(all[0].addr == "127.0.0.1:5000");
  CHECK(all[0].name == "worker");
  CHECK(log.Get(1).size() == 1);
  log.Reset();
  CHECK(log.Len() == 0);
}

TEST_CASE("the slow log cuts long arguments and long argument lists", "[slowlog]") {
  Slowlog log;
  Client c;
  const std::string big(200, 'x');
  std::vector<std::string> owned(40, "a");
  owned[0] = "CF.INSERT";
  owned[1] = big;
  std::vector<std::string_view> argv(owned.begin(), owned.end());
  log.Add(c, argv, 1, 10);
  auto e = log.Get(1).at(0);
  REQUIRE(e.argv.size() == 32);
  CHECK(e.argv[1] == std::string(128, 'x') + "... (72 more bytes)");
  CHECK(e.argv[31] == "... (9 more arguments)");
}

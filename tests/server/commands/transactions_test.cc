// MULTI / EXEC / DISCARD / WATCH / UNWATCH: queuing, EXECABORT after a queuing error, run-time
// errors inside EXEC, and optimistic locking across clients and databases.
#include <catch2/catch.hpp>
#include <string>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

constexpr std::string_view kQueued = "+QUEUED\r\n";

TEST_CASE("MULTI queues commands and EXEC runs them in order", "[transactions]") {
  TestServer ts;
  CHECK(ts.Run({"MULTI"}) == "+OK\r\n");
  CHECK(ts.client().in_multi);
  CHECK(ts.Run({"SET", "k", "v"}) == kQueued);
  CHECK(ts.Run({"CF.ADD", "f", "a"}) == kQueued);
  CHECK(ts.Run({"CF.EXISTS", "f", "a"}) == kQueued);
  CHECK(ts.Run({"GET", "k"}) == kQueued);
  SECTION("nothing runs before EXEC") {
    auto other = ts.NewClient();
    CHECK(ts.Run(other, {"EXISTS", "k", "f"}) == ":0\r\n");
  }
  CHECK(ts.Run({"EXEC"}) == "*4\r\n+OK\r\n:1\r\n:1\r\n$1\r\nv\r\n");
  CHECK_FALSE(ts.client().in_multi);
  CHECK(ts.Run({"GET", "k"}) == Bulk("v"));
}

TEST_CASE("EXEC of an empty transaction is an empty array", "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  CHECK(ts.Run({"EXEC"}) == "*0\r\n");
}

TEST_CASE("A run-time error inside EXEC does not stop the other commands", "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.ADD", "s", "a"}) == kQueued);
  CHECK(ts.Run({"SET", "x", "1"}) == kQueued);
  CHECK(ts.Run({"CF.INFO", "missing"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*3\r\n" + std::string(kWrongType) + "+OK\r\n-ERR not found\r\n");
  CHECK(ts.Run({"GET", "x"}) == Bulk("1"));
}

TEST_CASE("An error while queuing makes EXEC answer EXECABORT and run nothing", "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "v"}) == kQueued);
  SECTION("an unknown command") {
    CHECK(ts.Run({"NOSUCH", "x"}) ==
          "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n");
  }
  SECTION("a wrong number of arguments") {
    CHECK(ts.Run({"GET"}) == "-ERR wrong number of arguments for 'get' command\r\n");
  }
  CHECK(ts.Run({"SET", "k2", "v"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "-EXECABORT Transaction discarded because of previous errors.\r\n");
  CHECK_FALSE(ts.client().in_multi);
  CHECK(ts.Run({"EXISTS", "k", "k2"}) == ":0\r\n");
}

TEST_CASE("CF commands check their arity at EXEC, as RedisBloom's module commands do",
          "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  CHECK(ts.Run({"CF.ADD", "f"}) == kQueued);
  CHECK(ts.Run({"CF.ADD", "f", "a"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*2\r\n-ERR wrong number of arguments for 'cf.add' command\r\n:1\r\n");
}

TEST_CASE("DISCARD drops the queued commands", "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "v"}) == kQueued);
  CHECK(ts.Run({"DISCARD"}) == "+OK\r\n");
  CHECK_FALSE(ts.client().in_multi);
  CHECK(ts.Run({"EXISTS", "k"}) == ":0\r\n");
  CHECK(ts.Run({"EXEC"}) == "-ERR EXEC without MULTI\r\n");
  CHECK(ts.Run({"DISCARD"}) == "-ERR DISCARD without MULTI\r\n");
}

TEST_CASE("MULTI inside MULTI is refused without aborting the transaction", "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  CHECK(ts.Run({"MULTI"}) == "-ERR MULTI calls can not be nested\r\n");
  CHECK(ts.Run({"SET", "k", "v"}) == kQueued);
  CHECK(ts.Run({"WATCH", "k"}) == "-ERR WATCH inside MULTI is not allowed\r\n");
  CHECK(ts.Run({"EXEC"}) == "*1\r\n+OK\r\n");
}

TEST_CASE("WATCH aborts EXEC when another client modified the key", "[transactions]") {
  TestServer ts;
  auto other = ts.NewClient();
  REQUIRE(ts.Run({"SET", "k", "0"}) == "+OK\r\n");
  CHECK(ts.Run({"WATCH", "k"}) == "+OK\r\n");
  SECTION("a string write") {
    REQUIRE(ts.Run(other, {"SET", "k", "theirs"}) == "+OK\r\n");
  }
  SECTION("a delete") {
    REQUIRE(ts.Run(other, {"DEL", "k"}) == ":1\r\n");
  }
  SECTION("an expiry change") {
    REQUIRE(ts.Run(other, {"EXPIREAT", "k", "4102444800"}) == ":1\r\n");
  }
  SECTION("FLUSHALL") {
    REQUIRE(ts.Run(other, {"FLUSHALL"}) == "+OK\r\n");
  }
  const std::string before = ts.Run(other, {"GET", "k"});
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "mine"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*-1\r\n");
  CHECK(ts.Run({"GET", "k"}) == before);
  // The watch is gone after the aborted EXEC.
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "mine"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*1\r\n+OK\r\n");
}

TEST_CASE("WATCH of a missing key aborts when a filter is created there", "[transactions]") {
  TestServer ts;
  auto other = ts.NewClient();
  CHECK(ts.Run({"WATCH", "f"}) == "+OK\r\n");
  REQUIRE(ts.Run(other, {"CF.ADD", "f", "x"}) == ":1\r\n");
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "y"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*-1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "f", "y"}) == ":0\r\n");
}

TEST_CASE("WATCH aborts EXEC after a change by the watching client itself", "[transactions]") {
  TestServer ts;
  REQUIRE(ts.Run({"WATCH", "k"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "1"}) == "+OK\r\n");
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "2"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*-1\r\n");
  CHECK(ts.Run({"GET", "k"}) == Bulk("1"));
}

TEST_CASE("EXEC runs when the watched keys were not modified", "[transactions]") {
  TestServer ts;
  auto other = ts.NewClient();
  REQUIRE(ts.Run({"SET", "k", "0"}) == "+OK\r\n");
  REQUIRE(ts.Run({"WATCH", "k", "other"}) == "+OK\r\n");
  SECTION("reads by another client") {
    REQUIRE(ts.Run(other, {"GET", "k"}) == Bulk("0"));
  }
  SECTION("a write to another key") {
    REQUIRE(ts.Run(other, {"SET", "unrelated", "x"}) == "+OK\r\n");
  }
  SECTION("a write to the same name in another database") {
    REQUIRE(ts.Run(other, {"SELECT", "1"}) == "+OK\r\n");
    REQUIRE(ts.Run(other, {"SET", "k", "db1"}) == "+OK\r\n");
  }
  SECTION("a change after UNWATCH") {
    CHECK(ts.Run({"UNWATCH"}) == "+OK\r\n");
    REQUIRE(ts.Run(other, {"SET", "k", "theirs"}) == "+OK\r\n");
  }
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"SET", "k", "mine"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*1\r\n+OK\r\n");
  CHECK(ts.Run({"GET", "k"}) == Bulk("mine"));
}

TEST_CASE("An aborted EXEC is a RESP3 null", "[transactions][resp3]") {
  TestServer ts;
  auto other = ts.NewClient();
  REQUIRE(ts.Run({"HELLO", "3"}).rfind("%", 0) == 0);
  REQUIRE(ts.Run({"WATCH", "k"}) == "+OK\r\n");
  REQUIRE(ts.Run(other, {"SET", "k", "x"}) == "+OK\r\n");
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "_\r\n");
  // A successful EXEC carries RESP3 replies.
  REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
  REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == kQueued);
  REQUIRE(ts.Run({"CF.EXISTS", "f", "b"}) == kQueued);
  CHECK(ts.Run({"EXEC"}) == "*2\r\n#t\r\n#f\r\n");
}

}  // namespace
}  // namespace cuckood::test

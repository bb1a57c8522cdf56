// The dispatcher (server/dispatcher.h): the checks before a command runs, in their order, and
// what it records after (statistics from the error reply the writer recorded).
#include "server/dispatcher.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "harness.h"

using namespace cuckood;
using test::Err;
using test::Int;
using test::TestServer;

namespace {

uint64_t Errors(TestServer& ts, const std::string& code) {
  auto errors = ts.server().stats().Errors();
  auto it = errors.find(code);
  return it == errors.end() ? 0 : it->second;
}

}  // namespace

TEST_CASE("the dispatcher answers unknown commands and bad arity before running anything",
          "[dispatcher]") {
  TestServer ts;
  auto& stats = ts.server().stats();
  CHECK(ts.Run({"NOSUCH", "a", "b"}) ==
        Err("ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' "));
  CHECK(Errors(ts, "ERR") == 1);
  CHECK(ts.Run({"CF.ADD", "k"}) == Err("ERR wrong number of arguments for 'cf.add' command"));
  CHECK(stats.For("cf.add").rejected_calls == 1);
  CHECK(stats.For("cf.add").calls == 0);     // (a rejected command does not run)
  CHECK(ts.Run({"EXISTS", "k"}) == Int(0));  // nothing was created
}

TEST_CASE("a client that has not authenticated may only run the no-auth commands", "[dispatcher]") {
  TestServer ts([](server::Config& c) { c.requirepass = "secret"; });
  server::Client client = ts.NewClient();
  client.authenticated = false;
  CHECK(ts.Run(client, {"CF.ADD", "k", "a"}) == Err("NOAUTH Authentication required."));
  CHECK(Errors(ts, "NOAUTH") == 1);
  CHECK(ts.Run(client, {"AUTH", "wrong"}).rfind("-WRONGPASS", 0) == 0);
  CHECK(ts.Run(client, {"AUTH", "secret"}) == "+OK\r\n");
  CHECK(ts.Run(client, {"CF.ADD", "k", "a"}) == Int(1));
}

TEST_CASE("failed calls and error statistics come from the command's own error reply",
          "[dispatcher]") {
  TestServer ts;
  auto& stats = ts.server().stats();
  REQUIRE(ts.Run({"SET", "s", "v"}) == "+OK\r\n");
  SECTION("an error reply counts a failed call and its error code") {
    CHECK(ts.Run({"CF.ADD", "s", "a"}).rfind("-WRONGTYPE", 0) == 0);
    CHECK(stats.For("cf.add").calls == 1);
    CHECK(stats.For("cf.add").failed_calls == 1);
    CHECK(Errors(ts, "WRONGTYPE") == 1);
    CHECK(ts.Run({"CF.ADD", "f", "a"}) == Int(1));
    CHECK(stats.For("cf.add").calls == 2);
    CHECK(stats.For("cf.add").failed_calls == 1);
  }
  SECTION("an EXEC whose queued command failed is not itself a failed call") {
    REQUIRE(ts.Run({"MULTI"}) == "+OK\r\n");
    REQUIRE(ts.Run({"CF.ADD", "s", "a"}) == "+QUEUED\r\n");
    REQUIRE(ts.Run({"CF.ADD", "f", "a"}) == "+QUEUED\r\n");
    const std::string reply = ts.Run({"EXEC"});
    CHECK(reply.rfind("*2\r\n-WRONGTYPE", 0) == 0);
    CHECK(stats.For("exec").calls == 1);
    CHECK(stats.For("exec").failed_calls == 0);
    CHECK(stats.For("cf.add").failed_calls == 1);
    CHECK(Errors(ts, "WRONGTYPE") == 1);
  }
}

TEST_CASE("while loading, only the commands flagged for it run", "[dispatcher]") {
  TestServer ts;
  ts.server().dispatcher().SetLoading(true);
  CHECK(ts.Run({"CF.EXISTS", "k", "a"}).rfind("-LOADING ", 0) == 0);
  CHECK(ts.Run({"PING"}).rfind("-LOADING ", 0) == 0);  // (as in Redis: PING is not flagged)
  CHECK(ts.Run({"INFO", "server"}).rfind("$", 0) == 0);
  ts.server().dispatcher().SetLoading(false);
  CHECK(ts.Run({"CF.EXISTS", "k", "a"}) == Int(0));
}

TEST_CASE("CLIENT PAUSE WRITE holds back writes and lets reads run", "[dispatcher]") {
  TestServer ts;
  auto& d = ts.server().dispatcher();
  const auto* add = ts.server().commands().Find("cf.add");
  const auto* exists = ts.server().commands().Find("cf.exists");
  REQUIRE((add != nullptr && exists != nullptr));
  d.Pause(std::chrono::steady_clock::now() + std::chrono::seconds(30), /*all=*/false);
  CHECK(d.PauseRemaining(add, ts.client()) > std::chrono::seconds(1));
  CHECK(d.PauseRemaining(exists, ts.client()) == std::chrono::steady_clock::duration::zero());
  d.Unpause();
  CHECK(d.PauseRemaining(add, ts.client()) == std::chrono::steady_clock::duration::zero());
}

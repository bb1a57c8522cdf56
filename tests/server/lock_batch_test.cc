// The lock batch of an io thread (server/lock_batch.h): writes on different keys dispatched with
// it share one write group, their replies wait for its commit, and a command outside the group
// commits it first.
#include "server/lock_batch.h"

#include <catch2/catch.hpp>
#include <string>

#include "harness.h"
#include "resp/writer.h"

using namespace cuckood;
using test::TestServer;

namespace {

// Dispatches argv for client with the batch, appending the reply to *out.
void Send(TestServer& ts, server::Client& client, server::LockBatch& batch, std::string* out,
          std::initializer_list<std::string_view> argv) {
  resp::Writer writer(out, client.proto);
  ts.server().dispatcher().Dispatch(client, server::Argv(argv.begin(), argv.end()), writer, &batch);
}

}  // namespace

TEST_CASE("pipelined filter writes on different keys share one write group", "[lock_batch]") {
  TestServer ts;
  auto& stats = ts.server().stats();
  server::LockBatch batch(stats);
  server::Client client = ts.NewClient();
  client.lock_batching = true;
  std::string out;
  const uint64_t groups = stats.write_groups;
  const uint64_t grouped = stats.write_group_commands;
  for (int i = 0; i < 10; ++i) {
    Send(ts, client, batch, &out, {"CF.ADD", "key-" + std::to_string(i), "item"});
  }
  CHECK(batch.has_group());
  CHECK(client.group_pending);  // the replies wait for the group's write
  CHECK(stats.write_groups == groups);
  batch.End();
  CHECK_FALSE(client.group_pending);
  CHECK(stats.write_groups == groups + 1);
  CHECK(stats.write_group_commands == grouped + 10);
  std::string expected;
  for (int i = 0; i < 10; ++i) {
    expected += ":1\r\n";
  }
  CHECK(out == expected);
  // Stored: another client (outside the batch) sees every item.
  for (int i = 0; i < 10; ++i) {
    CHECK(ts.Run({"CF.EXISTS", "key-" + std::to_string(i), "item"}) == ":1\r\n");
  }
}

TEST_CASE("a command that cannot join the group commits it before it runs", "[lock_batch]") {
  TestServer ts;
  auto& stats = ts.server().stats();
  server::LockBatch batch(stats);
  server::Client client = ts.NewClient();
  client.lock_batching = true;
  std::string out;
  const uint64_t groups = stats.write_groups;
  Send(ts, client, batch, &out, {"CF.ADD", "f", "a"});
  Send(ts, client, batch, &out, {"CF.ADD", "g", "b"});
  REQUIRE(batch.has_group());
  // A read is not grouped: the group is committed first, so it sees both writes.
  Send(ts, client, batch, &out, {"CF.MEXISTS", "f", "a", "b"});
  CHECK_FALSE(batch.has_group());
  CHECK(stats.write_groups == groups + 1);
  CHECK(out == ":1\r\n:1\r\n*2\r\n:1\r\n:0\r\n");
  batch.End();
}

TEST_CASE("a write whose key another batch holds is set aside, not run, when the client may park",
          "[lock_batch]") {
  TestServer ts;
  auto& stats = ts.server().stats();
  // Two io threads' batches (used here on one thread: setting aside never waits).
  server::LockBatch first(stats);
  server::LockBatch second(stats);
  server::Client a = ts.NewClient();
  server::Client b = ts.NewClient();
  a.lock_batching = true;
  b.lock_batching = true;
  std::string out_a;
  std::string out_b;
  Send(ts, a, first, &out_a, {"CF.ADD", "held", "x"});
  Send(ts, b, second, &out_b, {"CF.ADD", "own", "y"});
  REQUIRE(b.group_pending);  // (its reply waits for the second batch's group)
  REQUIRE(out_b == ":1\r\n");
  const uint64_t calls = stats.For("cf.add").calls;
  b.may_park = true;
  Send(ts, b, second, &out_b, {"CF.ADD", "held", "z"});
  CHECK(b.parked);  // the first batch holds "held": nothing ran or answered
  CHECK(out_b == ":1\r\n");
  CHECK(stats.For("cf.add").calls == calls);
  CHECK(second.has_group());  // the second batch goes on: its group is still open
  b.parked = false;
  // A key only the second batch holds is not held elsewhere: the command runs in the batch.
  Send(ts, b, second, &out_b, {"CF.ADD", "own", "w"});
  CHECK_FALSE(b.parked);
  CHECK(stats.For("cf.add").calls == calls + 1);
  // Once the first batch ends, the set-aside command runs.
  first.End();
  CHECK(out_a == ":1\r\n");
  Send(ts, b, second, &out_b, {"CF.ADD", "held", "z"});
  CHECK_FALSE(b.parked);
  second.End();
  CHECK_FALSE(b.group_pending);
  CHECK(out_b == ":1\r\n:1\r\n:1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "held", "z"}) == ":1\r\n");
  CHECK(ts.Run({"CF.EXISTS", "own", "w"}) == ":1\r\n");
  // A reader never parks: it reads a snapshot when a writer holds its key.
  Send(ts, a, first, &out_a, {"CF.ADD", "held", "v"});
  std::string out_c;
  server::Client c = ts.NewClient();
  c.lock_batching = true;
  c.may_park = true;
  Send(ts, c, second, &out_c, {"CF.EXISTS", "held", "z"});
  CHECK_FALSE(c.parked);
  CHECK(out_c == ":1\r\n");
  first.End();
}

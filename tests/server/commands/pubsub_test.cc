// The Pub/Sub commands through the dispatcher: SUBSCRIBE / PSUBSCRIBE / UNSUBSCRIBE replies,
// PUBLISH counts and delivery, PUBSUB CHANNELS / NUMSUB / NUMPAT, RESP2 subscribed mode.
#include "server/pubsub.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "tests/server/harness.h"

namespace cuckood::test {
namespace {

// What the server hands a subscribed client.
struct Inbox : server::PubSubSink {
  std::vector<server::PubSubMessage> got;
  void Deliver(std::shared_ptr<const server::PubSubMessage> msg) override { got.push_back(*msg); }
};

TEST_CASE("SUBSCRIBE confirms each channel with the subscription count", "[pubsub]") {
  TestServer ts;
  auto inbox = std::make_shared<Inbox>();
  auto sub = ts.NewClient();
  sub.pubsub_sink = inbox;
  CHECK(ts.Run(sub, {"SUBSCRIBE", "news", "sport"}) ==
        "*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
        "*3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:2\r\n");
  CHECK(ts.Run({"PUBLISH", "news", "hello"}) == ":1\r\n");
  CHECK(ts.Run({"PUBLISH", "weather", "rain"}) == ":0\r\n");
  REQUIRE(inbox->got.size() == 1);
  CHECK(inbox->got[0].channel == "news");
  CHECK(inbox->got[0].payload == "hello");
  CHECK_FALSE(inbox->got[0].from_pattern);
  SECTION("PUBSUB CHANNELS and NUMSUB see the subscription") {
    CHECK(ts.Run({"PUBSUB", "CHANNELS", "n*"}) == "*1\r\n$4\r\nnews\r\n");
    CHECK(ts.Run({"PUBSUB", "NUMSUB", "news", "weather"}) ==
          "*4\r\n$4\r\nnews\r\n:1\r\n$7\r\nweather\r\n:0\r\n");
  }
  SECTION("UNSUBSCRIBE counts down; PUBLISH then reaches nobody") {
    CHECK(ts.Run(sub, {"UNSUBSCRIBE", "news"}) ==
          "*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:1\r\n");
    CHECK(ts.Run(sub, {"UNSUBSCRIBE", "sport"}) ==
          "*3\r\n$11\r\nunsubscribe\r\n$5\r\nsport\r\n:0\r\n");
    CHECK(ts.Run({"PUBLISH", "news", "again"}) == ":0\r\n");
    CHECK(ts.Run({"PUBSUB", "CHANNELS"}) == "*0\r\n");
  }
}

TEST_CASE("PSUBSCRIBE delivers messages of matching channels with the pattern", "[pubsub]") {
  TestServer ts;
  auto inbox = std::make_shared<Inbox>();
  auto sub = ts.NewClient();
  sub.pubsub_sink = inbox;
  CHECK(ts.Run(sub, {"PSUBSCRIBE", "user.*"}) ==
        "*3\r\n$10\r\npsubscribe\r\n$6\r\nuser.*\r\n:1\r\n");
  CHECK(ts.Run({"PUBSUB", "NUMPAT"}) == ":1\r\n");
  CHECK(ts.Run({"PUBLISH", "user.42", "login"}) == ":1\r\n");
  CHECK(ts.Run({"PUBLISH", "order.1", "x"}) == ":0\r\n");
  REQUIRE(inbox->got.size() == 1);
  CHECK(inbox->got[0].from_pattern);
  CHECK(inbox->got[0].pattern == "user.*");
  CHECK(inbox->got[0].channel == "user.42");
  CHECK(ts.Run(sub, {"PUNSUBSCRIBE"}) == "*3\r\n$12\r\npunsubscribe\r\n$6\r\nuser.*\r\n:0\r\n");
  CHECK(ts.Run({"PUBSUB", "NUMPAT"}) == ":0\r\n");
}

TEST_CASE("A RESP2 subscriber may only run the subscription commands", "[pubsub]") {
  TestServer ts;
  auto inbox = std::make_shared<Inbox>();
  auto sub = ts.NewClient();
  sub.pubsub_sink = inbox;
  REQUIRE(ts.Run(sub, {"SUBSCRIBE", "c"}).rfind("*3\r\n", 0) == 0);
  CHECK(ts.Run(sub, {"GET", "k"}) ==
        "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        "are allowed in this context\r\n");
  CHECK(ts.Run(sub, {"PING"}) == "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
  CHECK(ts.Run(sub, {"PING", "hi"}) == "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
  SECTION("RESET leaves subscribed mode") {
    CHECK(ts.Run(sub, {"RESET"}) == "+RESET\r\n");
    CHECK(ts.Run(sub, {"GET", "k"}) == "$-1\r\n");
    CHECK(ts.Run({"PUBLISH", "c", "x"}) == ":0\r\n");
  }
}

TEST_CASE("UNSUBSCRIBE without subscriptions answers a nil channel and count 0", "[pubsub]") {
  TestServer ts;
  CHECK(ts.Run({"UNSUBSCRIBE"}) == "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
  CHECK(ts.Run({"PUBSUB", "NUMSUB"}) == "*0\r\n");
}

}  // namespace
}  // namespace cuckood::test

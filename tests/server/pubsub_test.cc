#include "server/pubsub.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "server/server.h"

namespace cuckood::server {
namespace {

// Collects what the registry hands a subscriber.
struct Inbox : PubSubSink {
  std::vector<PubSubMessage> got;
  void Deliver(std::shared_ptr<const PubSubMessage> msg) override { got.push_back(*msg); }
};

struct Subscriber {
  Client client;
  std::shared_ptr<Inbox> inbox = std::make_shared<Inbox>();
  explicit Subscriber(uint64_t id) {
    client.id = id;
    client.pubsub_sink = inbox;
  }
};

TEST_CASE("PubSub delivers to channel and pattern subscribers", "[pubsub]") {
  PubSub ps;
  Subscriber a(1), b(2);
  CHECK(ps.Subscribe(a.client, "news"));
  CHECK_FALSE(ps.Subscribe(a.client, "news"));  // already subscribed: nothing changes
  CHECK(ps.PSubscribe(a.client, "n*"));
  CHECK(ps.PSubscribe(b.client, "n?ws"));
  CHECK(SubscriptionCount(a.client) == 2);
  CHECK(a.client.kind == ClientKind::kPubSub);

  // a counts twice (channel and pattern), b once; "other" matches nobody.
  CHECK(ps.Publish("news", "hello", nullptr, nullptr) == 3);
  CHECK(ps.Publish("other", "x", nullptr, nullptr) == 0);
  REQUIRE(a.inbox->got.size() == 2);
  CHECK_FALSE(a.inbox->got[0].from_pattern);
  CHECK(a.inbox->got[0].payload == "hello");
  CHECK(a.inbox->got[1].pattern == "n*");
  REQUIRE(b.inbox->got.size() == 1);
  CHECK(b.inbox->got[0].pattern == "n?ws");
  CHECK(b.inbox->got[0].channel == "news");

  CHECK(ps.NumSub("news") == 1);
  CHECK(ps.NumPat() == 2);
  CHECK(ps.Channels(std::nullopt) == std::vector<std::string>{"news"});
  CHECK(ps.Channels(std::string_view("x*")).empty());

  SECTION("the publisher's own message is written to its reply, not posted") {
    std::string out;
    resp::Writer w(&out, 3);
    CHECK(ps.Publish("news", "me", &a.client, &w) == 3);
    CHECK(out ==
          ">3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nme\r\n"
          ">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nme\r\n");
    CHECK(a.inbox->got.size() == 2);
    CHECK(b.inbox->got.size() == 2);
  }
  SECTION("unsubscribing removes empty channels and patterns") {
    CHECK(ps.Unsubscribe(a.client, "news"));
    CHECK_FALSE(ps.Unsubscribe(a.client, "news"));
    CHECK(ps.NumChannels() == 0);
    ps.UnsubscribeAll(a.client);
    CHECK(SubscriptionCount(a.client) == 0);
    CHECK(a.client.kind == ClientKind::kNormal);
    CHECK(ps.NumPat() == 1);
    CHECK(ps.PUnsubscribe(b.client, "n?ws"));
    CHECK(ps.NumPat() == 0);
    CHECK(ps.Publish("news", "x", nullptr, nullptr) == 0);
  }
  SECTION("a detached (killed) client receives nothing and is not counted") {
    ps.Detach(a.client.id);
    CHECK(ps.NumChannels() == 0);
    CHECK(ps.Publish("news", "x", nullptr, nullptr) == 1);
    CHECK(a.inbox->got.size() == 2);
    ps.UnsubscribeAll(a.client);  // (its own io thread, later: nothing left to remove)
    CHECK(ps.NumPat() == 1);
  }
  SECTION("a replica link keeps its kind while subscribed") {
    Subscriber r(3);
    r.client.kind = ClientKind::kReplica;
    ps.Subscribe(r.client, "c");
    CHECK(r.client.kind == ClientKind::kReplica);
    ps.UnsubscribeAll(r.client);
    CHECK(r.client.kind == ClientKind::kReplica);
  }
}

TEST_CASE("RESP2 subscribed mode allows only the subscription commands", "[pubsub]") {
  Client c;
  CommandSpec get;
  get.name = "get";
  CommandSpec ping;
  ping.name = "ping";
  CHECK_FALSE(InSubscribedMode(c));
  c.channels.insert("x");
  CHECK(InSubscribedMode(c));
  CHECK_FALSE(AllowedInSubscribedMode(get));
  CHECK(AllowedInSubscribedMode(ping));
  CHECK(SubscribedModeError(get, {"GET", "k"}) ==
        "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
        "are allowed in this context");
  c.proto = 3;
  CHECK_FALSE(InSubscribedMode(c));  // RESP3 subscribers may run any command
}

}  // namespace
}  // namespace cuckood::server

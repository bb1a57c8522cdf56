// Pub/Sub: the registry of channel and pattern subscriptions, shared by every io thread.
//
// Threading: a client's own subscription sets (Client::channels / Client::patterns) belong to its
// io thread, like the rest of Client. The registry maps channels and patterns to the subscribed
// clients' sinks under one shared mutex: SUBSCRIBE and friends take it exclusively, PUBLISH and
// PUBSUB take it shared. PUBLISH never touches another client's connection: it hands each
// receiver a shared message through PubSubSink::Deliver, which posts to the connection's own
// executor (server/connection.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "resp/writer.h"
#include "server/command.h"

namespace cuckood::server {

struct Client;

// One published message as one receiver gets it.
struct PubSubMessage {
  std::string pattern;  // the matching pattern of a pmessage; empty for a channel message
  bool from_pattern = false;
  std::string channel;
  std::string payload;
};

// Writes a message as Redis sends it: a `message` (3 elements) or `pmessage` (4 elements) array
// in RESP2, the same as a push frame in RESP3.
void WritePubSubMessage(resp::Writer& out, const PubSubMessage& msg);

// Where a subscribed client's messages go. Deliver may be called from any thread.
class PubSubSink {
 public:
  virtual ~PubSubSink() = default;
  virtual void Deliver(std::shared_ptr<const PubSubMessage> msg) = 0;
};

class PubSub {
 public:
  // Each of these changes the calling client's subscriptions (on its io thread) and returns
  // whether anything changed. Client::kind becomes kPubSub with the first subscription and
  // kNormal again after the last one (a replica or master link keeps its kind).
  bool Subscribe(Client& client, std::string_view channel);
  bool Unsubscribe(Client& client, std::string_view channel);
  bool PSubscribe(Client& client, std::string_view pattern);
  bool PUnsubscribe(Client& client, std::string_view pattern);
  // Drops every subscription of the client, without replies (connection closed, RESET).
  void UnsubscribeAll(Client& client);
  // From any thread: the client (being killed) receives nothing more and counts as no
  // subscriber from now on, before its own io thread closes it and clears its sets.
  void Detach(uint64_t client_id);

  // Hands the message to every subscriber of the channel and of each matching pattern; returns
  // how many deliveries were made (a client subscribed to the channel and to a matching pattern
  // counts twice, as in Redis). When `self` is one of the receivers, its message is written to
  // self_out at once (Redis puts it before the PUBLISH reply) instead of being posted.
  size_t Publish(std::string_view channel, std::string_view payload, const Client* self,
                 resp::Writer* self_out);

  // PUBSUB introspection.
  std::vector<std::string> Channels(std::optional<std::string_view> pattern) const;
  size_t NumSub(std::string_view channel) const;
  size_t NumPat() const;       // distinct patterns with at least one subscriber
  size_t NumChannels() const;  // channels with at least one subscriber

 private:
  using Subscribers = std::unordered_map<uint64_t, std::weak_ptr<PubSubSink>>;
  bool Add(std::unordered_map<std::string, Subscribers>& map, const Client& client,
           std::string_view name);
  void Remove(std::unordered_map<std::string, Subscribers>& map, uint64_t id,
              const std::string& name);

  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Subscribers> channels_;
  std::unordered_map<std::string, Subscribers> patterns_;
};

// RESP2 "subscribed mode": a client with at least one subscription that speaks RESP2 may only
// run the commands below (RESP3 clients may run anything).
bool InSubscribedMode(const Client& client);
bool AllowedInSubscribedMode(const CommandSpec& spec);
// Redis's error for any other command; names a subcommand as "client|id".
std::string SubscribedModeError(const CommandSpec& spec, const Argv& argv);
// The client's number of subscriptions, the count field of (un)subscribe replies.
size_t SubscriptionCount(const Client& client);

}  // namespace cuckood::server

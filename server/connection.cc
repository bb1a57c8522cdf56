#include "server/connection.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "resp/writer.h"

namespace cuckood::server {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
// The most calls of a pipeline run as one (combine-commands).
constexpr size_t kMaxCombined = 128;
// Stop reading (and executing) while this much output waits for the socket.
// (With client-output-buffer-limit set, the limit takes its place, as in Redis: the client is
// disconnected once its pending output passes the limit.)
constexpr size_t kOutputHighWater = 256 * 1024;
constexpr auto kTlsHandshakeTimeout = std::chrono::seconds(10);

std::string EndpointText(const asio::ip::tcp::endpoint& ep) {
  auto a = ep.address();
  std::string host = a.to_string();
  if (a.is_v6()) {
    return host + ":" + std::to_string(ep.port());
  }
  return host + ":" + std::to_string(ep.port());
}

}  // namespace

std::string ClientFlagsText(ClientKind kind, bool in_multi) {
  std::string flags;
  if (kind == ClientKind::kReplica) {
    flags += 'S';
  } else if (kind == ClientKind::kMaster) {
    flags += 'M';
  } else if (kind == ClientKind::kPubSub) {
    flags += 'P';
  }
  if (in_multi) {
    flags += 'x';
  }
  return flags.empty() ? "N" : flags;
}

Connection::Connection(Server& server, asio::ip::tcp::socket socket, uint64_t id, size_t home,
                       size_t origin, asio::ssl::context* tls)
    : server_(server),
      batch_(&server.lock_batch(home)),
      home_(static_cast<int>(home)),
      origin_(static_cast<int>(origin)),
      socket_(std::move(socket)),
      idle_timer_(socket_.get_executor()),
      pause_timer_(socket_.get_executor()),
      id_(id) {
  if (tls != nullptr) {
    tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, *tls);
  }
  Config cfg = server_.live_config().Get();
  resp::ParserLimits limits;
  limits.max_bulk_len = cfg.proto_max_bulk_len;
  limits.query_buffer_limit = cfg.client_query_buffer_limit;
  limits.unauthenticated = !cfg.requirepass.empty();
  parser_.set_limits(limits);
  limits_ = limits;
  if (socket_.is_open()) {
    fd_ = static_cast<int>(socket_.native_handle());
  }
  client_.id = id;
  client_.tls = tls != nullptr;
  client_.authenticated = cfg.requirepass.empty();
  asio::error_code ec;
  auto peer = socket_.remote_endpoint(ec);
  if (!ec) {
    client_.addr = EndpointText(peer);
  }
  auto local = socket_.local_endpoint(ec);
  if (!ec) {
    client_.laddr = EndpointText(local);
  }
  snap_last_ = std::chrono::steady_clock::now();
}

Connection::~Connection() = default;

void Connection::Start() {
  auto self = shared_from_this();
  client_.owner = weak_from_this();
  client_.pubsub_sink = std::static_pointer_cast<PubSubSink>(self);
  client_.flush_later = [weak = weak_from_this()] {
    if (auto conn = weak.lock()) {
      conn->RunAtHome([conn] { conn->Flush(); });
    }
  };
  asio::post(socket_.get_executor(), [self] {
    if (!self->tls_) {
      self->Begin();
      return;
    }
    // A client that never completes its handshake is closed after kTlsHandshakeTimeout.
    self->idle_timer_.expires_after(kTlsHandshakeTimeout);
    self->idle_timer_.async_wait([self](const asio::error_code& ec) {
      if (!ec && !self->closed_) {
        spdlog::debug("TLS handshake timeout from {}", self->client_.addr);
        self->Close();
      }
    });
    self->tls_->async_handshake(asio::ssl::stream_base::server, [self](const asio::error_code& ec) {
      self->idle_timer_.cancel();
      if (self->closed_) {
        return;
      }
      if (ec) {
        self->server_.stats().tls_handshake_errors++;
        spdlog::debug("TLS handshake with {} failed: {}", self->client_.addr, ec.message());
        self->Close();
        return;
      }
      self->Begin();
    });
  });
}

void Connection::Begin() {
  ArmIdleTimer();
  DoRead();
}

void Connection::Kill() {
  auto self = shared_from_this();
  RunAtHome([self] { self->Close(); });
}

void Connection::Shutdown() {
  auto self = shared_from_this();
  RunAtHome([self] {
    self->batch_->End();  // (replies waiting for a write group go out first)
    self->closing_ = true;
    if (!self->write_in_flight_) {
      self->Flush();
      if (!self->write_in_flight_) {
        self->Close();
      }
    }
  });
}

void Connection::ArmIdleTimer() {
  int timeout = server_.live_config().Get().timeout;
  if (timeout <= 0 || closed_) {
    return;
  }
  idle_timer_.expires_after(std::chrono::seconds(1));
  auto self = shared_from_this();
  idle_timer_.async_wait([self, timeout, moves = moves_.load()](const asio::error_code& ec) {
    if (ec || self->moves_.load() != moves || self->closed_) {
      return;  // (moves: it fired as the connection moved; the new thread arms its own)
    }
    auto idle = std::chrono::steady_clock::now() - self->client_.last_interaction;
    // As in Redis, `timeout` spares subscribers (they wait for messages, not for replies) and
    // replication links.
    const bool exempt = self->client_.kind != ClientKind::kNormal;
    if (idle >= std::chrono::seconds(timeout) && !self->write_in_flight_ && !exempt) {
      spdlog::debug("closing idle client {}", self->client_.addr);
      self->Close();
      return;
    }
    self->ArmIdleTimer();
  });
}

size_t Connection::HighWater() const {
  const uint64_t limit = server_.live_config().client_output_buffer_limit();
  return limit > 0 ? static_cast<size_t>(limit) : kOutputHighWater;
}

void Connection::DoRead() {
  if (reading_ || closing_ || closed_) {
    return;
  }
  if (out_.size() + writing_.size() > HighWater()) {
    server_.stats().blocked_on_output++;
    return;  // resumed by OnWrite
  }
  reading_ = true;
  char* buf = parser_.PrepareWrite(kReadChunk);
  auto self = shared_from_this();
  auto done = [self](const asio::error_code& ec, size_t n) { self->OnRead(ec, n); };
  if (tls_) {
    tls_->async_read_some(asio::buffer(buf, kReadChunk), std::move(done));
  } else {
    socket_.async_read_some(asio::buffer(buf, kReadChunk), std::move(done));
  }
}

void Connection::OnRead(const asio::error_code& ec, size_t n) {
  reading_ = false;
  if (ec) {
    parser_.Commit(0);
    Close();
    return;
  }
  parser_.Commit(n);
  server_.stats().total_net_input_bytes += n;
  client_.last_interaction = std::chrono::steady_clock::now();
  const int home = home_.load(std::memory_order_relaxed);
  const size_t in_use = server_.io_balance().active();
  if (move_to_ >= 0 && (move_for_ < 0 || static_cast<size_t>(move_to_) >= in_use)) {
    move_to_ = -1;  // (a move to its place, or to a thread no longer in use: decided again)
  }
  if (move_to_ < 0) {
    const int place = Place();
    if (home != place &&
        (affinity_stripe_ < 0 || static_cast<size_t>(home) >= in_use ||
         client_.last_interaction - std::max(last_contention_, last_affine_write_) >=
             kQuietToReturn)) {
      // (away from its place for no key, on a thread no longer in use, or key-affinity's key
      // neither contended nor written in a while)
      move_to_ = place;
      move_for_ = -1;
    }
  }
  if (move_to_ >= 0) {
    if (move_to_ == home) {
      move_to_ = -1;
    } else if (CanMove() && MoveTo(move_to_, move_for_)) {
      return;  // (the new io thread runs what was read)
    }
  }
  ProcessInput();
}

void Connection::ProcessInput() {
  if (closed_) {
    return;
  }
  std::vector<std::string_view> argv;
  resp::Writer writer(&out_, client_.proto);
  bool ran = false;
  // The commands run here join the io thread's lock batch (Client::lock_batching), which ends
  // in a handler posted behind this one at the latest; replies that wait for its write group
  // are sent when it is committed (Flush waits while client_.group_pending).
  struct BatchScope {
    Connection& conn;
    explicit BatchScope(Connection& c) : conn(c) { conn.client_.lock_batching = true; }
    ~BatchScope() {
      if (conn.client_.lock_batching) {  // (not after End(): the pool may own client_ now)
        conn.client_.lock_batching = false;
      }
      conn.batch_->ScheduleEnd(conn.socket_.get_executor());
    }
    // Ends the batch now: before a command moves to the background pool (it takes its own
    // stripes, and client_ is the pool's until the reply is back), or before the connection
    // closes.
    void End() {
      conn.client_.lock_batching = false;
      conn.batch_->End();
    }
  } batch_scope(*this);
  // argv holds a command parsed while looking for calls to combine, which runs next (it is never
  // dropped: every path below either runs it or keeps a copy).
  bool looked_ahead = false;
  while (!closing_ && !busy_ && !park_pending_) {
    int parks = 0;           // how often argv was set aside before
    bool from_park = false;  // argv is a command set aside earlier (it runs on its own)
    if (!looked_ahead && !parked_.empty()) {
      resumed_ = std::move(parked_.front().args);
      parks = parked_.front().parks;
      parked_.pop_front();
      argv.assign(resumed_.begin(), resumed_.end());
      from_park = true;
    } else if (!looked_ahead) {
      if (out_.size() + writing_.size() > HighWater()) {
        break;  // backpressure: the rest waits until the socket drains
      }
      auto r = parser_.Next(&argv);
      if (r == resp::Parser::Result::kNeedMore) {
        break;
      }
      if (r == resp::Parser::Result::kError) {
        server_.stats().protocol_errors++;
        if (parser_.query_buffer_limit_hit()) {
          server_.stats().client_query_buffer_limit_disconnections++;
        }
        spdlog::debug("protocol error from {}: {}", client_.addr, parser_.error());
        writer.Error(parser_.error());
        closing_ = true;
        break;
      }
      if (argv.empty()) {
        continue;
      }
    }
    looked_ahead = false;
    const CommandSpec* spec = server_.commands().Find(argv[0]);
    if (server_.dispatcher().PauseRemaining(
            client_.in_multi && !(spec && spec->name == "exec") ? nullptr : spec, client_) >
        std::chrono::steady_clock::duration::zero()) {
      batch_scope.End();
      WaitForUnpause(spec, argv);
      break;  // the rest of the pipeline waits behind it
    }
    if (spec != nullptr && RunsInBackground(*spec, argv) && !client_.in_multi) {
      batch_scope.End();
      if (ran) {
        // (now: once the pool runs the command, client_ is the pool's until its reply is back)
        SyncSnapshot();
        ran = false;
      }
      RunInBackground(spec, argv);
      break;  // the rest of the pipeline waits for this command's reply
    }
    writer = resp::Writer(&out_, client_.proto);
    const bool may_park = parks < kMaxParks && !client_.in_multi;
    if (spec != nullptr && spec->combined != nullptr && argv.size() >= 2 && !client_.in_multi &&
        !from_park && server_.live_config().combine_commands()) {
      // The calls of this command on this key that follow in the pipeline run with it as one.
      // The next command is parsed now (the parser's views of commands parsed in a row stay
      // valid together): when it is not such a call, it runs next, as looked_ahead. (A kNeedMore
      // or kError while looking is said again by the next Next.)
      auto same = [&](const Argv& call) {
        return call.size() == argv.size() && call[1] == argv[1] &&
               server_.commands().Find(call[0]) == spec;
      };
      Argv& next = ahead_;
      // The same command on another key (reads of several keys run as one, across_keys).
      auto same_command = [&](const Argv& call) {
        return call.size() == argv.size() &&
               (call[0] == argv[0] || server_.commands().Find(call[0]) == spec);
      };
      // The calls that follow while fits(call) holds, with argv and next, into combined_ (the
      // first call that does not fit becomes argv, as looked_ahead).
      auto gather = [&](auto&& fits) {
        size_t n = 0;
        auto take = [&](const Argv& call) {
          if (combined_.size() <= n) {
            combined_.emplace_back();
          }
          combined_[n++].assign(call.begin(), call.end());
        };
        take(argv);
        take(next);
        while (n < kMaxCombined && parser_.Next(&next) == resp::Parser::Result::kCommand) {
          if (!fits(next)) {
            looked_ahead = true;
            break;
          }
          take(next);
        }
        if (looked_ahead) {
          argv.swap(next);  // (combined_ holds copies of the calls' views)
        }
        return std::span<const Argv>(combined_.data(), n);
      };
      const bool next_parsed = parser_.Next(&next) == resp::Parser::Result::kCommand;
      if (next_parsed && same(next)) {
        server_.dispatcher().DispatchCombined(client_, *spec, gather(same), writer, batch_);
      } else if (next_parsed && spec->across_keys != nullptr && same_command(next)) {
        server_.dispatcher().DispatchAcrossKeys(client_, *spec, gather(same_command), writer,
                                                batch_);
      } else {
        client_.may_park = may_park;
        server_.dispatcher().Dispatch(client_, spec, argv, writer, batch_);
        client_.may_park = false;
        if (client_.parked) {
          Park(argv, parks, &next);
          break;
        }
        if (!next.empty()) {
          argv.swap(next);
          looked_ahead = true;
        }
      }
    } else {
      client_.may_park = may_park;
      server_.dispatcher().Dispatch(client_, spec, argv, writer, batch_);
      client_.may_park = false;
      if (client_.parked) {
        Park(argv, parks, nullptr);
        break;
      }
    }
    if (client_.contended_stripe >= 0) {
      NoteContention(from_park);
    }
    if (client_.write_stripe >= 0) {
      if (client_.write_stripe == affinity_stripe_) {
        last_affine_write_ = client_.last_interaction;  // (when it was read)
      }
      client_.write_stripe = -1;
    }
    ran = true;
    if (limits_.unauthenticated == client_.authenticated) {
      // AUTH / HELLO AUTH / RESET changed what this client may send.
      limits_.unauthenticated = !client_.authenticated;
      parser_.set_limits(limits_);
    }
    if (client_.close_after_reply || client_.kill_requested) {
      closing_ = true;
    }
    if (client_.take_socket) {
      closing_ = true;  // (the socket changes hands once what is pending is written)
      break;
    }
    if (OverOutputLimit()) {
      spdlog::info("client {} closed for overcoming of output buffer limits", client_.addr);
      server_.stats().client_output_limit_disconnections++;
      Close();
      return;
    }
  }
  if (closing_ && client_.group_pending) {
    batch_scope.End();  // (the last replies go out before the connection closes)
  }
  query_buf_ = parser_.buffered();
  if (ran) {
    SyncSnapshot();
  }
  Flush();
  if (closing_) {
    if (!write_in_flight_) {
      client_.take_socket ? Detach() : Close();
    }
    return;
  }
  DoRead();
}

void Connection::Detach() {
  if (closed_) {
    return;
  }
  // The socket's descriptor goes on (a copy of it: asio's socket is closed, not shut down) to
  // whoever asked for it, in blocking mode.
  const int fd = ::dup(socket_.native_handle());
  closed_ = true;
  closing_ = true;
  asio::error_code ec;
  idle_timer_.cancel();
  socket_.close(ec);
  server_.watches().UnwatchAll(client_);
  server_.clients().Unregister(id_);
  auto take = std::move(client_.take_socket);
  client_.take_socket = nullptr;
  if (fd < 0) {
    return;
  }
  const int flags = fcntl(fd, F_GETFL, 0);
  (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  take(fd);
}

void Connection::RunInBackground(const CommandSpec* spec, const Argv& argv) {
  busy_ = true;
  auto owned = std::make_shared<std::vector<std::string>>(argv.begin(), argv.end());
  auto self = shared_from_this();
  server_.background().Begin();
  asio::post(server_.background().pool(), [self, spec, owned] {
    Argv views(owned->begin(), owned->end());
    std::string reply;
    resp::Writer writer(&reply, self->client_.proto);
    self->server_.dispatcher().Dispatch(self->client_, spec, views, writer);
    self->server_.background().End();
    self->RunAtHome([self, reply = std::move(reply)] {
      self->busy_ = false;
      if (self->closed_) {
        self->server_.watches().UnwatchAll(self->client_);
        self->server_.pubsub().UnsubscribeAll(self->client_);
        return;
      }
      self->out_ += reply;
      if (self->client_.close_after_reply || self->client_.kill_requested) {
        self->closing_ = true;
      }
      self->SyncSnapshot();
      self->ProcessInput();
    });
  });
}

void Connection::Park(const Argv& argv, int parks, Argv* next) {
  client_.parked = false;
  server_.stats().parked_commands++;
  NoteContention(parks > 0);
  // (copied first: argv may point into resumed_)
  Parked again{std::vector<std::string>(argv.begin(), argv.end()), parks + 1};
  if (next != nullptr && !next->empty()) {
    parked_.push_front(Parked{std::vector<std::string>(next->begin(), next->end()), 0});
    next->clear();
  }
  parked_.push_front(std::move(again));
  park_pending_ = true;  // (the pipeline stops here; reading goes on)
  auto self = shared_from_this();
  asio::post(socket_.get_executor(), [self] {
    self->park_pending_ = false;
    if (!self->closed_) {
      self->ProcessInput();
    }
  });
}

void Connection::NoteContention(bool again) {
  const int64_t stripe = client_.contended_stripe;
  client_.contended_stripe = -1;
  const size_t threads = server_.io_balance().active();  // (the io threads in use)
  if (stripe < 0 || again || threads < 2 || tls_) {
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  last_contention_ = now;
  const int to = static_cast<int>(static_cast<size_t>(stripe) % threads);
  if (to == home_.load(std::memory_order_relaxed)) {
    streak_ = 0;  // (the key belongs here: its writers on other threads come here)
    return;
  }
  if (stripe == streak_stripe_) {
    ++streak_;
  } else {
    streak_stripe_ = stripe;
    streak_ = 1;
  }
  if (streak_ >= kContentionsToMove && now - moved_at_ >= kMinStay &&
      server_.live_config().key_affinity()) {
    move_to_ = to;
    move_for_ = stripe;
  }
}

int Connection::Place() const {
  return static_cast<int>(server_.io_balance().Place(static_cast<size_t>(origin_)));
}

bool Connection::CanMove() const {
  // (nothing of the connection may be in flight on its thread: no read, write, write group,
  // background command, pause or set-aside command; and nothing another part of the server
  // keeps a pointer to the client for: subscriptions, watches, replication links)
  return !tls_ && !closing_ && !closed_ && !reading_ && !busy_ && !park_pending_ &&
         parked_.empty() && !write_in_flight_ && out_.empty() && !client_.group_pending &&
         !client_.in_multi && client_.watched.empty() && client_.channels.empty() &&
         client_.patterns.empty() && client_.kind == ClientKind::kNormal && !client_.take_socket &&
         !client_.kill_requested && !client_.close_after_reply;
}

bool Connection::MoveTo(int to, int64_t for_stripe) {
  asio::error_code ec;
  const auto protocol = socket_.local_endpoint(ec).protocol();
  if (ec) {
    move_to_ = -1;
    return false;
  }
  moving_.store(true);
  const int fd = socket_.release(ec);  // (deregistered from this thread's reactor)
  if (ec || fd < 0) {
    moving_.store(false);
    move_to_ = -1;
    return false;
  }
  moves_.fetch_add(1);
  idle_timer_.cancel();
  const auto now = std::chrono::steady_clock::now();
  moved_at_ = now;
  last_contention_ = now;
  affinity_stripe_ = to == Place() ? -1 : for_stripe;
  streak_ = 0;
  streak_stripe_ = -1;
  move_to_ = -1;
  move_for_ = -1;
  server_.stats().client_moves++;
  home_.store(to);
  auto self = shared_from_this();
  // (from here on this thread leaves the connection alone: what is posted to it comes to the new
  // thread, behind Land)
  asio::post(server_.io_context(static_cast<size_t>(to)),
             [self, fd, protocol] { self->Land(fd, protocol); });
  return true;
}

void Connection::Land(int fd, asio::ip::tcp protocol) {
  const auto home = static_cast<size_t>(home_.load());
  auto& context = server_.io_context(home);
  asio::ip::tcp::socket adopted(context);
  asio::error_code ec;
  adopted.assign(protocol, fd, ec);
  socket_ = std::move(adopted);
  idle_timer_ = asio::steady_timer(context);
  pause_timer_ = asio::steady_timer(context);
  batch_ = &server_.lock_batch(home);
  moving_.store(false);
  if (ec) {
    spdlog::warn("client {} lost while moving to io thread {}: {}", client_.addr, home,
                 ec.message());
    ::close(fd);
    Close();
    return;
  }
  ArmIdleTimer();
  ProcessInput();  // (what the old thread read)
}

void Connection::RunAtHome(std::function<void()> fn) {
  const int home = home_.load();
  auto self = shared_from_this();
  asio::post(server_.io_context(static_cast<size_t>(home)),
             [self, home, fn = std::move(fn)]() mutable {
               if (self->moving_.load() || self->home_.load() != home) {
                 self->RunAtHome(std::move(fn));  // (it moved meanwhile)
                 return;
               }
               fn();
             });
}

void Connection::WaitForUnpause(const CommandSpec* spec, const Argv& argv) {
  busy_ = true;
  paused_argv_.assign(argv.begin(), argv.end());
  // Re-checked at least every 100 ms, so CLIENT UNPAUSE lets the command go soon.
  auto wait = std::min<std::chrono::steady_clock::duration>(
      server_.dispatcher().PauseRemaining(spec, client_), std::chrono::milliseconds(100));
  pause_timer_.expires_after(wait);
  auto self = shared_from_this();
  pause_timer_.async_wait([self](const asio::error_code&) { self->ResumeAfterPause(); });
}

void Connection::ResumeAfterPause() {
  if (closed_) {
    // (Close left these to the end of the wait, as it does for a background command)
    busy_ = false;
    server_.watches().UnwatchAll(client_);
    server_.pubsub().UnsubscribeAll(client_);
    return;
  }
  Argv argv(paused_argv_.begin(), paused_argv_.end());
  const CommandSpec* spec = server_.commands().Find(argv[0]);
  if (server_.dispatcher().PauseRemaining(spec, client_) >
      std::chrono::steady_clock::duration::zero()) {
    WaitForUnpause(spec, argv);
    return;
  }
  if (spec != nullptr && RunsInBackground(*spec, argv) && !client_.in_multi) {
    RunInBackground(spec, argv);  // (it copies argv and clears busy_ when done)
    return;
  }
  busy_ = false;
  resp::Writer writer(&out_, client_.proto);
  server_.dispatcher().Dispatch(client_, spec, argv, writer, batch_);
  if (client_.close_after_reply || client_.kill_requested) {
    closing_ = true;
  }
  SyncSnapshot();
  ProcessInput();
}

void Connection::Flush() {
  if (write_in_flight_ || out_.empty() || closed_ || client_.group_pending) {
    return;  // (group_pending: the io thread's write group calls again once committed)
  }
  // A reply may show what another io thread's write group put in the in-memory cache: it goes
  // out once that write is stored.
  server_.engine().Settle();
  writing_.swap(out_);
  out_.clear();
  write_in_flight_ = true;
  pending_out_ = writing_.size();
  auto self = shared_from_this();
  auto done = [self](const asio::error_code& ec, size_t n) { self->OnWrite(ec, n); };
  if (tls_) {
    asio::async_write(*tls_, asio::buffer(writing_), std::move(done));
  } else {
    asio::async_write(socket_, asio::buffer(writing_), std::move(done));
  }
}

void Connection::Deliver(std::shared_ptr<const PubSubMessage> msg) {
  auto self = shared_from_this();
  RunAtHome([self, msg = std::move(msg)] { self->OnMessage(*msg); });
}

void Connection::OnMessage(const PubSubMessage& msg) {
  if (closing_ || closed_) {
    return;
  }
  resp::Writer writer(&out_, client_.proto);
  WritePubSubMessage(writer, msg);
  if (OverOutputLimit()) {
    spdlog::info("client {} closed for overcoming of output buffer limits", client_.addr);
    server_.stats().client_output_limit_disconnections++;
    Close();
    return;
  }
  pending_out_ = out_.size() + writing_.size();
  Flush();
}

bool Connection::OverOutputLimit() {
  const size_t pending = out_.size() + writing_.size();
  if (client_.kind == ClientKind::kNormal) {
    const uint64_t limit = server_.live_config().client_output_buffer_limit();
    return limit > 0 && pending > limit;
  }
  if (client_.kind != ClientKind::kPubSub) {
    return false;  // (replication links: their limits belong to replication)
  }
  const uint64_t hard = server_.live_config().pubsub_output_hard_limit();
  if (hard > 0 && pending > hard) {
    return true;
  }
  const uint64_t soft = server_.live_config().pubsub_output_soft_limit();
  if (soft == 0 || pending <= soft) {
    soft_limit_since_.reset();
    return false;
  }
  const auto now = std::chrono::steady_clock::now();
  if (!soft_limit_since_) {
    soft_limit_since_ = now;
    return false;
  }
  return now - *soft_limit_since_ >=
         std::chrono::seconds(server_.live_config().pubsub_output_soft_seconds());
}

void Connection::OnWrite(const asio::error_code& ec, size_t n) {
  write_in_flight_ = false;
  server_.stats().total_net_output_bytes += n;
  if (ec) {
    Close();
    return;
  }
  writing_.clear();
  if (writing_.capacity() > 4 * kOutputHighWater) {
    std::string().swap(writing_);
  }
  pending_out_ = out_.size();
  if (closing_) {
    if (!out_.empty()) {
      Flush();
    } else if (client_.take_socket) {
      Detach();
    } else {
      Close();
    }
    return;
  }
  // Commands may be waiting in the parser because of backpressure.
  ProcessInput();
}

void Connection::Close() {
  if (closed_) {
    return;
  }
  closed_ = true;
  closing_ = true;
  asio::error_code ec;
  idle_timer_.cancel();
  pause_timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  if (!busy_) {
    // (a background command still uses client_: its completion handler does this)
    server_.watches().UnwatchAll(client_);
    server_.pubsub().UnsubscribeAll(client_);
  }
  server_.clients().Unregister(id_);
}

void Connection::SyncSnapshot() {
  std::lock_guard lock(snapshot_mu_);
  snap_name_ = client_.name;
  snap_cmd_ = client_.last_command;
  snap_db_ = client_.db;
  snap_proto_ = client_.proto;
  snap_multi_ = client_.in_multi;
  snap_queued_ = client_.queued.size();
  snap_kind_ = client_.kind;
  snap_sub_ = client_.channels.size();
  snap_psub_ = client_.patterns.size();
  snap_last_ = client_.last_interaction;
  lib_name_ = client_.lib_name;
  lib_ver_ = client_.lib_ver;
}

ClientKind Connection::kind() const {
  std::lock_guard lock(snapshot_mu_);
  return snap_kind_;
}

std::string Connection::addr() const {
  return client_.addr;
}
std::string Connection::laddr() const {
  return client_.laddr;
}
std::string Connection::name() const {
  std::lock_guard lock(snapshot_mu_);
  return snap_name_;
}

std::string Connection::Describe() const {
  std::lock_guard lock(snapshot_mu_);
  auto now = std::chrono::steady_clock::now();
  auto age = std::chrono::duration_cast<std::chrono::seconds>(now - client_.created).count();
  auto idle = std::chrono::duration_cast<std::chrono::seconds>(now - snap_last_).count();
  size_t qbuf = query_buf_.load();
  size_t omem = pending_out_.load();
  std::string s;
  s.reserve(256);
  s += "id=" + std::to_string(id_);
  s += " addr=" + client_.addr;
  s += " laddr=" + client_.laddr;
  s += " fd=" + std::to_string(fd_) + " name=" + snap_name_;
  s += " age=" + std::to_string(age);
  s += " idle=" + std::to_string(idle);
  s += " flags=" + ClientFlagsText(snap_kind_, snap_multi_);
  s += " db=" + std::to_string(snap_db_);
  s += " sub=" + std::to_string(snap_sub_) + " psub=" + std::to_string(snap_psub_);
  s += " ssub=0 multi=" + (snap_multi_ ? std::to_string(snap_queued_) : std::string("-1"));
  s += " qbuf=" + std::to_string(qbuf) + " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=16384 rbp=0";
  s += " obl=0 oll=0 omem=" + std::to_string(omem);
  s += " tot-mem=" + std::to_string(qbuf + omem + 16384);
  s += " events=r cmd=" + snap_cmd_;
  s += " user=default redir=-1 resp=" + std::to_string(snap_proto_);
  s += " lib-name=" + lib_name_ + " lib-ver=" + lib_ver_;
  s += " io-thread=" + std::to_string(home_.load());  // (as Redis 8: the io thread serving it)
  return s;
}

}  // namespace cuckood::server

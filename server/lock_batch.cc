#include "server/lock_batch.h"

#include "server/client.h"
#include "server/stats.h"
#include "server/util.h"

namespace cuckood::server {

bool LockBatch::Covers(const std::vector<size_t>& stripes, bool exclusive) {
  const size_t max_stripes = exclusive_ ? kMaxExclusiveStripes : kMaxStripes;
  if (held_ && uses_ < kMaxUses && (exclusive_ || !exclusive)) {
    // Commands on other keys join the batch (and its write group) when their stripes are free:
    // taken without waiting, so no thread ever waits while it holds stripes.
    if (guard_.covers(stripes) ||
        (exclusive_ == exclusive && guard_.size() + stripes.size() <= max_stripes &&
         guard_.TryAdd(stripes))) {
      ++uses_;
      return true;
    }
  }
  return false;
}

bool LockBatch::HeldElsewhere(storage::LockManager& locks, const std::vector<size_t>& stripes,
                              size_t* held) const {
  for (size_t s : stripes) {
    if (held_ && guard_.holds(s)) {
      continue;
    }
    auto& m = locks.stripe(s);
    if (!m.try_lock()) {
      *held = s;
      return true;
    }
    m.unlock();
  }
  return false;
}

void LockBatch::Keep(storage::LockGuard guard, bool exclusive) {
  guard_ = std::move(guard);
  exclusive_ = exclusive;
  uses_ = 1;
  held_ = true;
}

storage::WriteGroup* LockBatch::Join(storage::Db& db, Client& client, std::string* out,
                                     size_t start, size_t commands) {
  if (!group_) {
    if (spare_) {
      group_ = std::move(spare_);
      group_->Reuse(db.engine(), &db.cache());
    } else {
      group_ = std::make_unique<storage::WriteGroup>(db.engine(), &db.cache());
    }
  }
  if (!client.group_pending) {
    client.group_pending = true;
    client.group_out = out;
    client.group_start = start;
    client.group_commands = 0;
    waiting_.push_back({&client, client.owner.lock()});
  }
  client.group_commands += commands;
  return group_.get();
}

void LockBatch::EndGroup() {
  if (!group_) {
    return;
  }
  auto s = group_->Commit();
  if (s.ok()) {
    spare_ = std::move(group_);
  } else {
    group_.reset();  // (a failed group answers its error until it is closed: not reused)
  }
  auto waiting = std::move(waiting_);
  waiting_.clear();
  uint64_t commands = 0;
  std::string error_reply;
  for (auto& w : waiting) {
    Client& c = *w.client;
    commands += c.group_commands;
    if (!s.ok()) {
      // Nothing of the group was stored: each of its commands answers the error instead.
      std::string& out = *c.group_out;
      out.resize(c.group_start);
      if (error_reply.empty()) {
        resp::Writer writer(&error_reply, c.proto);
        ReplyStatusError(writer, s);
      }
      const std::string_view text =
          std::string_view(error_reply)
              .substr(1, error_reply.size() > 3 ? error_reply.size() - 3 : 0);
      for (size_t i = 0; i < c.group_commands; ++i) {
        out += error_reply;
        stats_.CountError(text);
      }
    }
    c.group_pending = false;
    c.group_commands = 0;
    if (c.flush_later) {
      c.flush_later();
    }
  }
  stats_.write_groups++;
  stats_.write_group_commands += commands;
}

void LockBatch::End() {
  if (group_) {
    // Queued while the stripes are held (writes of a key are stored in the order they were
    // made); written after they are given back, so the other io threads' commands on these keys
    // run meanwhile. The replies still wait for the write (EndGroup).
    group_->Seal();
  }
  if (held_) {
    guard_.Release();
    held_ = false;
  }
  EndGroup();
}

void LockBatch::ScheduleEnd(const asio::any_io_executor& executor) {
  if (!group_) {
    // Only a write group waits for the other clients of this round; stripes alone are given
    // back at once.
    End();
    return;
  }
  if (end_posted_) {
    return;
  }
  end_posted_ = true;
  asio::post(executor, [this] {
    end_posted_ = false;
    End();
  });
}

}  // namespace cuckood::server

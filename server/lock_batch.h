// The lock batch of one io thread (see Client::lock_batching): while the thread runs the commands
// its connections have received (a pipeline, and the commands of other clients that arrived in
// the same round of the event loop), the commands keep their key stripes instead of unlocking
// and relocking them for every command, and their filter writes share one RocksDB write (group
// commit, storage/write_group.h). A command on other keys joins when their stripes can be taken
// without waiting (at most kMaxStripes stripes and kMaxUses commands a batch, fewer for writes).
// The batch ends before a command must wait for stripes, before anything waits, and at the latest
// in a handler posted behind the round (ScheduleEnd).
//
// One per io thread, owned by the Server and handed to the dispatcher by the connections of that
// thread; used only on that thread.
#pragma once

#include <asio.hpp>
#include <memory>
#include <string>
#include <vector>

#include "storage/db.h"
#include "storage/locks.h"
#include "storage/write_group.h"

namespace cuckood::server {

struct Client;
class Stats;

class LockBatch {
 public:
  static constexpr int kMaxUses = 256;
  static constexpr size_t kMaxStripes = 256;
  // Writers' batches hold fewer stripes: another io thread's command on one of their keys waits
  // for the whole batch to end (with 1,000 keys, a batch of 256 writes held about a fifth of
  // them). At 32, bench/ab's CF.ADD over 1,000 keys at -P 16 ran 13% faster than at 256, the
  // other rows unchanged; since the write path got cheaper, 64 spends ~5% less server CPU per
  // command on that row than 32 (bench/pair; 16 spent more, 128 about as much as 64).
  // (Commands on stripes the batch holds still join up to kMaxUses: at 32 commands too, one
  // key's CF.INSERT ×100 -P 16 fell from 1.32M to 0.88M items/s.)
  static constexpr size_t kMaxExclusiveStripes = 64;

  explicit LockBatch(Stats& stats) : stats_(stats) {}

  // Whether the batch holds (or can take without waiting) these sorted stripes in this mode.
  // When it cannot, nothing changes: the caller either sets its command aside (HeldElsewhere)
  // or ends the batch (End) before it waits for the stripes.
  bool Covers(const std::vector<size_t>& stripes, bool exclusive);
  // Whether another thread holds one of these stripes that the batch does not (each is tried
  // and given back at once: the answer is for now only); *held is then that stripe.
  bool HeldElsewhere(storage::LockManager& locks, const std::vector<size_t>& stripes,
                     size_t* held) const;
  // Starts holding these stripes (after Covers returned false).
  void Keep(storage::LockGuard guard, bool exclusive);

  // The open write group (opened on first use, for db), which the client's reply from `start`
  // of *out on waits for: it is not sent before the group is committed.
  // commands: how many commands of the client this join is for (several consecutive calls run as
  // one, Dispatcher::DispatchCombined): each answers the group's error if its write fails.
  storage::WriteGroup* Join(storage::Db& db, Client& client, std::string* out, size_t start,
                            size_t commands = 1);
  bool has_group() const { return group_ != nullptr; }
  bool group_full() const { return group_ && group_->Full(); }

  // Commits the write group and lets the replies that waited for it go (each becomes the error
  // if the commit fails).
  void EndGroup();
  // Ends the batch: queues the group's write, gives the stripes back, then EndGroup.
  void End();
  // Posts End behind the handlers queued on this io thread, once (at once when no group waits).
  void ScheduleEnd(const asio::any_io_executor& executor);

 private:
  Stats& stats_;
  bool held_ = false;
  bool exclusive_ = false;
  int uses_ = 0;
  storage::LockGuard guard_;
  std::unique_ptr<storage::WriteGroup> group_;  // the open group, or nullptr
  // The last group, committed: reused by the next (WriteGroup::Reuse) rather than built anew.
  std::unique_ptr<storage::WriteGroup> spare_;
  struct Waiting {
    Client* client;
    std::shared_ptr<void> keepalive;  // the client's connection
  };
  std::vector<Waiting> waiting_;
  bool end_posted_ = false;
};

}  // namespace cuckood::server

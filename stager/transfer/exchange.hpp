// Moving chunks between the ranks (one per node).
//
// Chunk c is read from the source by rank c % N, so every node contributes
// read bandwidth and the file system sees each byte once.  It then travels
// around a ring, owner -> owner+1 -> ... -> owner+N-1: every rank receives
// from its left neighbour every chunk it did not read, and sends to its right
// neighbour every chunk that neighbour did not read.  Each link carries
// (N-1)/N of the data whatever N is, so the time stays flat as nodes are
// added.  A window of chunks is in flight at once: reading (several threads,
// each its own stream), the network (nonblocking sends and receives) and
// writing (several threads) overlap; there is no per-chunk collective.
// Every chunk carries an xxh3 checksum that every receiver verifies.
#pragma once

#include <mpi.h>
#include <vector>

#include "stager/transfer/source_reader.hpp"
#include "stager/transfer/transfer_types.hpp"

namespace dlstage::stager {

// Collective over comm (the job's ranks, or those of the nodes a node
// cache missed on); throws Error on a read, write, checksum or
// communication failure on this rank.  A source file not as planned is
// told to `changes` when given (stager/transfer/source_reader.hpp), else an Error.
ExchangeResult exchange_chunks(const Plan& plan, const std::vector<Chunk>& chunks, TreeWriter& writer,
                               const ExchangeOptions& options, const ProgressFn& progress, MPI_Comm comm,
                               ProvingReads* changes = nullptr);

// Where an exchange gets its parts while it runs (the segments of a tree
// walked while it moves): the same parts in the same order on every rank.
// Called on the exchange's MPI thread, which must not wait: poll says at
// once whether a part is there.
class PartFeed {
public:
    enum class Poll { Part, NotYet, End };
    virtual ~PartFeed() = default;
    // Work the feed does meanwhile (preparing its next part), called
    // whenever the exchange looks around; true when it did some.
    virtual bool advance() { return false; }
    // Throws what made the feed fail (the walk's error, no room).
    virtual Poll poll(ExchangePart& part) = 0;
    // Every chunk of part is written here (parts in feed order).
    virtual void done(const ExchangePart& part) = 0;
};

// One exchange for every part the feed gives, until it ends: the reads of
// the next part go on while the last chunks of this one are written (an
// exchange per part would empty the pipeline between parts).  Collective
// over comm, as exchange_chunks.
ExchangeResult exchange_parts(PartFeed& feed, const ExchangeOptions& options, const ProgressFn& progress, MPI_Comm comm,
                              ProvingReads* changes = nullptr);

}  // namespace dlstage::stager

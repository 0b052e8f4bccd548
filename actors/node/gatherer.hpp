#pragma once

// Inside a group or a tree (group.hpp): the actor a peer reaches (the front, group.cpp) checks the
// token and hands each request, under a fresh random ticket, to a gatherer that asks the members and
// sends the sum back under that ticket. A group's gatherer asks its node's shards (group.cpp); a
// tree's asks its node's peers and, slice by slice, its children's trees (tree.cpp).

#include "actors/wire/messages.hpp"

#include <cstddef>
#include <vector>

namespace shardopt::actors {

using gathered_atom = caf::atom_constant<caf::atom("gathered")>;

/// The front as its gatherer reaches it: the tree protocol, and the gatherer's sums or errors.
using group_actor = tree_actor::extend<caf::reacts_to<gathered_atom, access_token, block_sums>,
                                       caf::reacts_to<gathered_atom, access_token, caf::error>>;

/// A gatherer: the front's requests, each under a ticket (first) ahead of the token. A group's
/// gatherer never gets slices (its front refuses them).
using gatherer_actor = caf::typed_actor<
  caf::reacts_to<eval_atom, access_token, access_token, std::uint64_t, exact_grid, dense_vector>,
  caf::reacts_to<hessvec_atom, access_token, access_token, std::uint64_t, std::uint64_t, exact_grid,
                 dense_vector, dense_vector>,
  caf::reacts_to<quality_atom, access_token, access_token, std::uint64_t, dense_vector>,
  caf::reacts_to<line_atom, access_token, access_token, std::uint64_t, std::uint64_t, std::uint64_t,
                 dense_vector, dense_vector, dense_vector>,
  caf::reacts_to<part_atom, access_token, access_token, std::uint64_t, tree_slice, exact_grid,
                 dense_vector, dense_vector>>;

/// Spawns a tree's gatherer for the front `front`: it asks `own` (this node's peers) whole and
/// `children` (other nodes' trees) slice by slice. Only messages from `front` are served.
gatherer_actor spawn_tree_gatherer(caf::local_actor* parent, std::vector<shard_actor> own,
                                   std::vector<tree_actor> children, group_actor front);

} // namespace shardopt::actors

// Attributes of the warp, atomic and shared-memory ops (ir.h OpCode::Shuffle, Vote, Atomic):
// the kinds, memory orders and scopes, and their one spelling, used by the printer, the parser,
// the DSL front end and the lowerings alike.
#pragma once
#include <cstdint>
#include <string>

namespace opencute::ir {

// PTX shfl.sync modes.
enum class ShuffleKind : uint8_t { Idx, Up, Down, Bfly };
// PTX vote.sync modes; Ballot yields the 32 lane bits, the others a predicate.
enum class VoteKind : uint8_t { Ballot, Any, All, Uni };
// PTX atom operations; Cas takes (ptr, compare, value).
// Inc/Dec are PTX's wrapping counters on u32: inc stores old >= b ? 0 : old + 1, dec stores
// (old == 0 || old > b) ? b : old - 1.
enum class AtomicKind : uint8_t { Add, And, Or, Xor, Max, Min, Exch, Cas, Inc, Dec };
// PTX memory-consistency qualifiers of atom (.sem and .scope).
enum class MemoryOrder : uint8_t { Relaxed, Acquire, Release, AcqRel };
enum class MemoryScope : uint8_t { Cta, Cluster, Gpu, Sys };
// PTX redux.sync operations: on 32-bit integers all six, on f32 (sm_100a) Min and Max.
enum class ReduxKind : uint8_t { Add, Min, Max, And, Or, Xor };

const char* shuffle_kind_name(ShuffleKind k);    // "idx", "up", "down", "bfly"
const char* vote_kind_name(VoteKind k);          // "ballot", "any", "all", "uni"
const char* atomic_kind_name(AtomicKind k);      // "add", ..., "exch", "cas"
const char* memory_order_name(MemoryOrder o);    // "relaxed", "acquire", "release", "acq_rel"
const char* memory_scope_name(MemoryScope s);    // "cta", "cluster", "gpu", "sys"
const char* redux_kind_name(ReduxKind k);        // "add", "min", "max", "and", "or", "xor"

// Inverses of the names above; throw std::invalid_argument naming the accepted spellings.
ShuffleKind shuffle_kind_from_name(const std::string& name);
VoteKind vote_kind_from_name(const std::string& name);
AtomicKind atomic_kind_from_name(const std::string& name);
MemoryOrder memory_order_from_name(const std::string& name);
MemoryScope memory_scope_from_name(const std::string& name);
ReduxKind redux_kind_from_name(const std::string& name);

}  // namespace opencute::ir

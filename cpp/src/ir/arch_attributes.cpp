#include "ir/arch_attributes.h"

#include <iterator>
#include <stdexcept>

namespace opencute::ir {
namespace {

template <typename E, size_t N>
E from_name(const char* const (&names)[N], const std::string& name, const char* what) {
  std::string known;
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return E(i);
    known += std::string(i ? ", " : "") + names[i];
  }
  throw std::invalid_argument("unknown " + std::string(what) + " '" + name + "'; expected one of " + known);
}

const char* const kShuffle[] = {"idx", "up", "down", "bfly"};
const char* const kVote[] = {"ballot", "any", "all", "uni"};
const char* const kAtomic[] = {"add", "and", "or", "xor", "max", "min", "exch", "cas", "inc", "dec"};
const char* const kOrder[] = {"relaxed", "acquire", "release", "acq_rel"};
const char* const kScope[] = {"cta", "cluster", "gpu", "sys"};
const char* const kRedux[] = {"add", "min", "max", "and", "or", "xor"};

}  // namespace

const char* shuffle_kind_name(ShuffleKind k) { return kShuffle[int(k) & 3]; }
const char* vote_kind_name(VoteKind k) { return kVote[int(k) & 3]; }
const char* atomic_kind_name(AtomicKind k) {
  return size_t(k) < std::size(kAtomic) ? kAtomic[int(k)] : "?";
}
const char* memory_order_name(MemoryOrder o) { return kOrder[int(o) & 3]; }
const char* memory_scope_name(MemoryScope s) { return kScope[int(s) & 3]; }
const char* redux_kind_name(ReduxKind k) { return size_t(k) < std::size(kRedux) ? kRedux[int(k)] : "?"; }
ReduxKind redux_kind_from_name(const std::string& n) { return from_name<ReduxKind>(kRedux, n, "redux operation"); }

ShuffleKind shuffle_kind_from_name(const std::string& n) { return from_name<ShuffleKind>(kShuffle, n, "shuffle kind"); }
VoteKind vote_kind_from_name(const std::string& n) { return from_name<VoteKind>(kVote, n, "vote kind"); }
AtomicKind atomic_kind_from_name(const std::string& n) { return from_name<AtomicKind>(kAtomic, n, "atomic operation"); }
MemoryOrder memory_order_from_name(const std::string& n) {
  return from_name<MemoryOrder>(kOrder, n, "memory order (sem)");
}
MemoryScope memory_scope_from_name(const std::string& n) { return from_name<MemoryScope>(kScope, n, "memory scope"); }

}  // namespace opencute::ir

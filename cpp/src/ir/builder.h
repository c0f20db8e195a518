// Builds IR at an insertion point (the end of a block), folding constants as it goes: an op
// whose operands are all constants becomes a constant, so static values never reach the IR.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/arch_attributes.h"
#include "ir/ir.h"

namespace opencute::ir {

// A value used outside the region that defines it (e.g. a variable first assigned inside a
// dynamic `if` and read after it).
struct ScopeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Operands of the wrong type for an op.
struct TypeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Builder {
 public:
  explicit Builder(Block* block = nullptr) : block_(block) {}

  Block* block() const { return block_; }
  void set_block(Block* b) { block_ = b; }
  void set_location(const std::string& file, int line) { file_ = file; line_ = line; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }

  Value* const_int(Type t, int64_t v);
  Value* const_float(Type t, double v);
  Value* const_bool(bool v) { return const_int(bool_type(), v ? 1 : 0); }

  Value* binary(OpCode code, Value* a, Value* b);
  Value* unary(OpCode code, Value* a);
  Value* cmp(CmpPredicate p, Value* a, Value* b);
  Value* select(Value* cond, Value* a, Value* b);
  Value* cast(Value* v, Type to);
  Value* bitcast(Value* v, Type to);
  Value* fma(Value* a, Value* b, Value* c);
  Value* math(const std::string& fn, const std::vector<Value*>& args);

  Value* ptr_add(Value* ptr, Value* index);
  Value* load(Value* ptr, Type result);
  void store(Value* value, Value* ptr);
  Value* local_array(Type element, int64_t count, int align);
  Value* vec_extract(Value* vec, int lane);
  Value* vec_insert(Value* vec, Value* scalar, int lane);
  Value* vec_splat(Value* scalar, int lanes);

  Value* special(OpCode code, int dim = 0);  // ThreadIdx/BlockIdx/BlockDim/GridDim/LaneIdx/WarpIdx
  void barrier();
  void named_barrier(Value* id, Value* count, NamedBarrierKind kind);
  // Opaque inline assembly with `result` (null: none) as its output type.
  Value* inline_asm(Type result, const std::vector<Value*>& operands, const std::string& asm_text,
                    const std::string& constraints, bool has_side_effects);
  void griddepcontrol(GridDepControlKind kind);
  void printf(const std::string& format, const std::vector<Value*>& args);

  // Warp-synchronous ops over 32-bit registers (the DSL widens and splits other types).
  Value* shuffle(ShuffleKind kind, Value* value, Value* offset, Value* clamp, Value* member_mask);
  Value* vote(VoteKind kind, Value* pred, Value* member_mask);
  // redux.sync: i32 / u32 values (any kind) or f32 (Min / Max, optionally of |x| and NaN-propagating).
  Value* warp_redux(ReduxKind kind, Value* value, Value* member_mask, bool abs = false, bool nan = false);
  // Returns the value at *ptr before the operation; `compare` only for AtomicKind::Cas.
  Value* atomic(AtomicKind kind, MemoryOrder order, MemoryScope scope, Value* ptr, Value* value,
                Value* compare = nullptr);
  Value* smem_alloc(Type element, int64_t count, int align);
  Value* dyn_smem(Type element, int align);
  Value* dyn_smem_size();
  // A condition that is constant true emits nothing.
  void assertion(Value* cond, const std::string& message, const std::string& file, int line);
  Op* launch(const std::string& kernel, const std::vector<Value*>& grid, const std::vector<Value*>& block,
             Value* smem, Value* stream, const std::vector<Value*>& cluster, const std::vector<Value*>& args, int64_t flags = 0,
             const std::vector<Value*>& events = {}, const std::vector<int64_t>& event_attrs = {});

  // Structured control flow. The caller fills the region blocks (moving the insertion point
  // into them and ending each with yield/condition) and sets the op's results with
  // set_results once their types are known.
  Op* create_for(Value* lb, Value* ub, Value* step, const std::vector<Value*>& inits, int64_t unroll);
  Op* create_if(Value* cond);
  Op* create_while(const std::vector<Value*>& inits);
  void set_results(Op* op, const std::vector<Type>& types);
  void yield(const std::vector<Value*>& values);
  void condition(Value* cond, const std::vector<Value*>& values);
  void ret(const std::vector<Value*>& values);

  Op* create(OpCode code, const std::vector<Value*>& operands, const std::vector<Type>& result_types,
             int num_regions = 0);

 private:
  void check_scope(Value* v) const;
  Value* folded(Type t, const struct Scalar& s);

  Block* block_;
  std::string file_;
  int line_ = 0;
};

}  // namespace opencute::ir

#include "ir/builder.h"

#include "ir/directed_rounding.h"
#include "ir/scalar_semantics.h"

namespace opencute::ir {

namespace {
std::string type_mismatch(const char* what, Type a, Type b) {
  return std::string(what) + ": operand types differ (" + to_string(a) + " vs " + to_string(b) + ")";
}
}  // namespace

void Builder::check_scope(Value* v) const {
  if (!v) throw TypeError("null operand");
  if (!v->owner && !v->def)  // a placeholder: make_fragment_C's tensor-memory pointer in host code
    throw ScopeError("this value is a placeholder with no storage (a tensor-memory fragment made outside a "
                     "@cute.kernel has only a layout); make it inside the kernel to read or write it");
  if (!block_->is_within(v->owner))
    throw ScopeError("a value defined inside a dynamic region (if/for/while body or another function) is used outside it");
}

Op* Builder::create(OpCode code, const std::vector<Value*>& operands, const std::vector<Type>& result_types,
                    int num_regions) {
  if (!block_) throw std::logic_error("Builder has no insertion block");
  for (Value* v : operands) check_scope(v);
  auto op = std::make_unique<Op>();
  op->code = code;
  op->operands = operands;
  op->parent = block_;
  op->file = file_;
  op->line = line_;
  for (Type t : result_types) {
    auto v = std::make_unique<Value>();
    v->type = t;
    v->def = op.get();
    v->owner = block_;
    v->index = int(op->results.size());
    op->results.push_back(std::move(v));
  }
  for (int i = 0; i < num_regions; ++i) {
    Region r;
    r.block = std::make_unique<Block>();
    r.block->parent_op = op.get();
    op->regions.push_back(std::move(r));
  }
  block_->ops.push_back(std::move(op));
  return block_->ops.back().get();
}

void Builder::set_results(Op* op, const std::vector<Type>& types) {
  op->results.clear();
  for (Type t : types) {
    auto v = std::make_unique<Value>();
    v->type = t;
    v->def = op;
    v->owner = op->parent;
    v->index = int(op->results.size());
    op->results.push_back(std::move(v));
  }
}

Value* Builder::const_int(Type t, int64_t v) {
  Op* op = create(OpCode::Constant, {}, {t});
  op->int_attr = t->is_float() ? 0 : wrap_int(t, v);
  if (t->is_float()) op->float_attr = round_float(t, double(v));
  return op->result();
}

Value* Builder::const_float(Type t, double v) {
  if (t->is_int()) return const_int(t, int64_t(v));
  Op* op = create(OpCode::Constant, {}, {t});
  op->float_attr = round_float(t, v);
  return op->result();
}

Value* Builder::folded(Type t, const Scalar& s) {
  return t->is_float() ? const_float(t, s.f) : const_int(t, s.i);
}

static Scalar scalar_of_const(const Value* v) {
  return v->type->is_float() ? Scalar::of_float(constant_float(v)) : Scalar::of_int(constant_int(v));
}

Value* Builder::binary(OpCode code, Value* a, Value* b) {
  if (a->type != b->type) throw TypeError(type_mismatch(opcode_name(code), a->type, b->type));
  Type t = a->type;
  if (!t->is_scalar() && !t->is_vector()) throw TypeError(std::string(opcode_name(code)) + " needs numeric operands");
  if (t->is_scalar() && is_constant(a) && is_constant(b)) {
    Scalar r;
    if (eval_binary(code, t, scalar_of_const(a), scalar_of_const(b), &r, nullptr)) return folded(t, r);
  }
  // Identities that keep layout arithmetic lean; integer only (x*0 on floats is not 0 for NaN).
  if (t->is_int()) {
    auto is_c = [](Value* v, int64_t c) { return is_constant(v) && constant_int(v) == c; };
    if ((code == OpCode::Add || code == OpCode::Sub || code == OpCode::Or || code == OpCode::Xor ||
         code == OpCode::Shl || code == OpCode::Shr) && is_c(b, 0))
      return a;
    if ((code == OpCode::Add || code == OpCode::Or || code == OpCode::Xor) && is_c(a, 0)) return b;
    if ((code == OpCode::Mul || code == OpCode::Div || code == OpCode::FloorDiv) && is_c(b, 1)) return a;
    if (code == OpCode::Mul && is_c(a, 1)) return b;
    if (code == OpCode::Mul && (is_c(a, 0) || is_c(b, 0))) return const_int(t, 0);
  }
  return create(code, {a, b}, {t})->result();
}

Value* Builder::unary(OpCode code, Value* a) {
  if (a->type->is_scalar() && is_constant(a)) return folded(a->type, eval_unary(code, a->type, scalar_of_const(a)));
  return create(code, {a}, {a->type})->result();
}

Value* Builder::cmp(CmpPredicate p, Value* a, Value* b) {
  if (a->type != b->type) throw TypeError(type_mismatch("cmp", a->type, b->type));
  if (a->type->is_scalar() && is_constant(a) && is_constant(b))
    return const_bool(eval_cmp(p, a->type, scalar_of_const(a), scalar_of_const(b)));
  Op* op = create(OpCode::Cmp, {a, b}, {bool_type()});
  op->int_attr = int64_t(p);
  return op->result();
}

Value* Builder::select(Value* cond, Value* a, Value* b) {
  if (!cond->type->is_bool()) throw TypeError("select condition must be i1, got " + to_string(cond->type));
  if (a->type != b->type) throw TypeError(type_mismatch("select", a->type, b->type));
  if (is_constant(cond)) return constant_int(cond) ? a : b;
  if (a == b) return a;
  return create(OpCode::Select, {cond, a, b}, {a->type})->result();
}

Value* Builder::cast(Value* v, Type to) {
  if (v->type == to) return v;
  if (!v->type->is_scalar() || !to->is_scalar()) throw TypeError("cast needs scalar types");
  if (is_constant(v)) return folded(to, eval_cast(v->type, to, scalar_of_const(v)));
  return create(OpCode::Cast, {v}, {to})->result();
}

Value* Builder::bitcast(Value* v, Type to) {
  if (v->type == to) return v;
  if (v->type->width != to->width)
    throw TypeError("bitcast between types of different widths: " + to_string(v->type) + " -> " + to_string(to));
  if (is_constant(v) && v->type->is_scalar() && to->is_scalar())
    return folded(to, eval_bitcast(v->type, to, scalar_of_const(v)));
  return create(OpCode::Bitcast, {v}, {to})->result();
}

Value* Builder::fma(Value* a, Value* b, Value* c) {
  if (a->type != b->type || a->type != c->type) throw TypeError("fma operands must share a type");
  if (!a->type->is_float()) throw TypeError("fma needs float operands");
  return create(OpCode::Fma, {a, b, c}, {a->type})->result();
}

Value* Builder::math(const std::string& fn, const std::vector<Value*>& args) {
  int arity = 0;
  if (!is_known_math_function(fn, &arity)) throw TypeError("unknown math function '" + fn + "'");
  if (int(args.size()) != arity) throw TypeError("math function '" + fn + "' takes " + std::to_string(arity) + " operands");
  Type t = args[0]->type;
  if (!scalar_of(t)->is_float()) throw TypeError("math function '" + fn + "' needs float operands, got " + to_string(t));
  if (parse_directed_rounding(fn, nullptr) && !(t->is_scalar() && t->is_f32()))
    throw TypeError("math function '" + fn + "' needs f32 operands, got " + to_string(t));
  bool all_const = t->is_scalar();
  for (Value* a : args) {
    if (a->type != t) throw TypeError("math function '" + fn + "' operands must share a type");
    all_const = all_const && is_constant(a);
  }
  if (all_const) {
    std::vector<Scalar> s;
    for (Value* a : args) s.push_back(scalar_of_const(a));
    Scalar r;
    if (eval_math(fn, t, s, &r)) return folded(t, r);
  }
  Op* op = create(OpCode::Math, args, {t});
  op->str_attr = fn;
  return op->result();
}

Value* Builder::ptr_add(Value* ptr, Value* index) {
  if (!ptr->type->is_pointer()) throw TypeError("ptr_add needs a pointer, got " + to_string(ptr->type));
  if (!index->type->is_int()) throw TypeError("ptr_add index must be an integer");
  if (is_constant(index) && constant_int(index) == 0) return ptr;
  Type pt = ptr->type;
  // Packed sub-byte elements: the index must land on a byte (cute::offset_pointer checks the
  // layout's proof; a constant is checked here), and the byte offset is index * bits / 8.
  const int64_t bits = pt->element->bit_size();
  if (pt->element->is_sub_byte() && is_constant(index) && constant_int(index) * bits % 8 != 0)
    throw TypeError("ptr_add of " + std::to_string(constant_int(index)) + " elements of " + to_string(pt->element) +
                    " does not land on a byte");
  int elem = pt->element->min_align();
  int align = elem;
  if (is_constant(index)) {
    // The alignment survives when the byte offset is a multiple of it.
    int64_t off = constant_int(index) * bits / 8;
    align = pt->align;
    while (align > elem && off % align != 0) align /= 2;
  }
  Type rt = pointer_type(pt->element, pt->space, std::max(align, 1));
  return create(OpCode::PtrAdd, {ptr, index}, {rt})->result();
}

Value* Builder::load(Value* ptr, Type result) {
  if (!ptr->type->is_pointer()) throw TypeError("load needs a pointer, got " + to_string(ptr->type));
  if (scalar_of(result) != scalar_of(ptr->type->element) && result != ptr->type->element)
    throw TypeError("load of " + to_string(result) + " through " + to_string(ptr->type));
  return create(OpCode::Load, {ptr}, {result})->result();
}

void Builder::store(Value* value, Value* ptr) {
  if (!ptr->type->is_pointer()) throw TypeError("store needs a pointer, got " + to_string(ptr->type));
  if (scalar_of(value->type) != scalar_of(ptr->type->element))
    throw TypeError("store of " + to_string(value->type) + " through " + to_string(ptr->type));
  create(OpCode::Store, {value, ptr}, {});
}

Value* Builder::local_array(Type element, int64_t count, int align) {
  Op* op = create(OpCode::Alloca, {}, {pointer_type(element, AddrSpace::Rmem, align)});
  op->int_attr = count;
  return op->result();
}

Value* Builder::vec_extract(Value* vec, int lane) {
  if (!vec->type->is_vector() || lane < 0 || lane >= vec->type->lanes) throw TypeError("bad vec_extract");
  Op* op = create(OpCode::VecExtract, {vec}, {vec->type->element});
  op->int_attr = lane;
  return op->result();
}

Value* Builder::vec_insert(Value* vec, Value* scalar, int lane) {
  if (!vec->type->is_vector() || scalar->type != vec->type->element || lane < 0 || lane >= vec->type->lanes)
    throw TypeError("bad vec_insert");
  Op* op = create(OpCode::VecInsert, {vec, scalar}, {vec->type});
  op->int_attr = lane;
  return op->result();
}

Value* Builder::vec_splat(Value* scalar, int lanes) {
  return create(OpCode::VecSplat, {scalar}, {vector_type(scalar->type, lanes)})->result();
}

Value* Builder::special(OpCode code, int dim) {
  Op* op = create(code, {}, {i32()});
  op->int_attr = dim;
  return op->result();
}

void Builder::barrier() { create(OpCode::Barrier, {}, {}); }
Value* Builder::inline_asm(Type result, const std::vector<Value*>& operands, const std::string& asm_text,
                          const std::string& constraints, bool has_side_effects) {
  if (constraints.find('\0') != std::string::npos) throw TypeError("inline_asm constraints contain a NUL byte");
  Op* op = create(OpCode::InlineAsm, operands, result ? std::vector<Type>{result} : std::vector<Type>{});
  op->str_attr = constraints + std::string(1, '\0') + asm_text;
  op->int_attr = has_side_effects ? 1 : 0;
  return result ? op->result(0) : nullptr;
}

void Builder::griddepcontrol(GridDepControlKind kind) {
  create(OpCode::GridDepControl, {}, {})->int_attr = int64_t(kind);
}

void Builder::named_barrier(Value* id, Value* count, NamedBarrierKind kind) {
  create(OpCode::NamedBarrier, {id, count}, {})->int_attr = int64_t(kind);
}

void Builder::printf(const std::string& format, const std::vector<Value*>& args) {
  Op* op = create(OpCode::Printf, args, {});
  op->str_attr = format;
}

Value* Builder::shuffle(ShuffleKind kind, Value* value, Value* offset, Value* clamp, Value* member_mask) {
  for (Value* v : {value, offset, clamp, member_mask})
    if (v->type != i32()) throw TypeError("shuffle operands must be i32, got " + to_string(v->type));
  Op* op = create(OpCode::Shuffle, {value, offset, clamp, member_mask}, {i32()});
  op->int_attr = int64_t(kind);
  return op->result();
}

Value* Builder::vote(VoteKind kind, Value* pred, Value* member_mask) {
  if (!pred->type->is_bool()) throw TypeError("vote predicate must be i1, got " + to_string(pred->type));
  if (member_mask->type != i32()) throw TypeError("vote member mask must be i32, got " + to_string(member_mask->type));
  Op* op = create(OpCode::Vote, {pred, member_mask}, {kind == VoteKind::Ballot ? i32() : bool_type()});
  op->int_attr = int64_t(kind);
  return op->result();
}

// Which element types an atomic supports: what PTX `atom` provides on sm_70 and later
// (bf16 add needs sm_90).
static bool atomic_supports(AtomicKind kind, Type t) {
  if (t->is_bool() || !t->is_scalar()) return false;
  const int w = t->width;
  switch (kind) {
    case AtomicKind::Add: return t->is_float() ? true : (w == 32 || w == 64);
    case AtomicKind::And: case AtomicKind::Or: case AtomicKind::Xor: case AtomicKind::Max: case AtomicKind::Min:
      return t->is_int() && (w == 32 || w == 64);
    case AtomicKind::Exch: return w == 32 || w == 64;
    case AtomicKind::Cas: return w == 16 || w == 32 || w == 64;
    case AtomicKind::Inc: case AtomicKind::Dec: return t->is_int() && w == 32;  // as u32 (quack passes i32)
  }
  return false;
}

Value* Builder::atomic(AtomicKind kind, MemoryOrder order, MemoryScope scope, Value* ptr, Value* value,
                       Value* compare) {
  if (!ptr->type->is_pointer()) throw TypeError("atomic needs a pointer, got " + to_string(ptr->type));
  AddrSpace sp = ptr->type->space;
  if (sp != AddrSpace::Gmem && sp != AddrSpace::Smem && sp != AddrSpace::Generic)
    throw TypeError("atomics act on global, shared or generic memory, not " + to_string(sp));
  Type t = ptr->type->element;
  if (value->type != t) throw TypeError(type_mismatch("atomic", value->type, t));
  if ((kind == AtomicKind::Cas) != (compare != nullptr))
    throw TypeError("atomic: a compare value is given exactly for cas");
  if (compare && compare->type != t) throw TypeError(type_mismatch("atomic cas", compare->type, t));
  if (!atomic_supports(kind, t))
    throw TypeError(std::string("atomic ") + atomic_kind_name(kind) + " is not available on " + to_string(t));
  std::vector<Value*> ops = {ptr};
  if (compare) ops.push_back(compare);
  ops.push_back(value);
  Op* op = create(OpCode::Atomic, ops, {t});
  op->int_attr = int64_t(kind);
  op->ints = {int64_t(order), int64_t(scope)};
  return op->result();
}

static void check_align(int align) {
  if (align <= 0 || (align & (align - 1)) != 0)
    throw TypeError("shared-memory alignment must be a positive power of two, got " + std::to_string(align));
}

Value* Builder::smem_alloc(Type element, int64_t count, int align) {
  check_align(align);
  if (count <= 0) throw TypeError("a shared-memory allocation needs a positive element count");
  Op* op = create(OpCode::SmemAlloc, {}, {pointer_type(element, AddrSpace::Smem, align)});
  op->int_attr = count;
  return op->result();
}

Value* Builder::dyn_smem(Type element, int align) {
  check_align(align);
  return create(OpCode::DynSmem, {}, {pointer_type(element, AddrSpace::Smem, align)})->result();
}

Value* Builder::dyn_smem_size() { return create(OpCode::DynSmemSize, {}, {i32()})->result(); }

void Builder::assertion(Value* cond, const std::string& message, const std::string& file, int line) {
  if (!cond->type->is_bool()) throw TypeError("assert condition must be i1, got " + to_string(cond->type));
  if (is_constant(cond) && constant_int(cond)) return;
  Op* op = create(OpCode::Assert, {cond}, {});
  op->str_attr = message;
  op->file = file;
  op->line = line;
}

Op* Builder::launch(const std::string& kernel, const std::vector<Value*>& grid, const std::vector<Value*>& block,
                    Value* smem, Value* stream, const std::vector<Value*>& cluster, const std::vector<Value*>& args,
                    int64_t flags, const std::vector<Value*>& events, const std::vector<int64_t>& event_attrs) {
  if (grid.size() != 3 || block.size() != 3) throw TypeError("launch needs 3 grid and 3 block dimensions");
  std::vector<Value*> ops = grid;
  ops.insert(ops.end(), block.begin(), block.end());
  ops.push_back(smem);
  ops.push_back(stream);
  bool has_cluster = !cluster.empty();
  // Without a cluster the cluster slots repeat the grid values: the operand layout stays fixed,
  // nothing reads them (int_attr says there is no cluster) and no constants are made for them.
  for (int i = 0; i < 3; ++i) ops.push_back(has_cluster ? cluster[i] : grid[size_t(i)]);
  size_t want_events = ((flags & kLaunchCompletionEvent) ? 1 : 0) + ((flags & kLaunchProgrammaticEvent) ? 1 : 0);
  if (events.size() != want_events) throw TypeError("launch: the event operands do not match the event flags");
  for (Value* e : events)
    if (e->type != i64()) throw TypeError("launch: an event handle must be i64, got " + to_string(e->type));
  ops.insert(ops.end(), events.begin(), events.end());
  ops.insert(ops.end(), args.begin(), args.end());
  Op* op = create(OpCode::Launch, ops, {});
  if (want_events) {
    op->ints = event_attrs;
    op->ints.resize(3, 0);
  }
  op->str_attr = kernel;
  op->int_attr = (flags & ~int64_t(kLaunchCluster)) | (has_cluster ? int64_t(kLaunchCluster) : int64_t(0));
  return op;
}

Op* Builder::create_for(Value* lb, Value* ub, Value* step, const std::vector<Value*>& inits, int64_t unroll) {
  if (lb->type != ub->type || lb->type != step->type || !lb->type->is_int())
    throw TypeError("for bounds must be integers of one type");
  std::vector<Value*> ops = {lb, ub, step};
  ops.insert(ops.end(), inits.begin(), inits.end());
  Op* op = create(OpCode::For, ops, {}, 1);
  op->int_attr = unroll;
  Block* body = op->region_block(0);
  body->add_arg(lb->type);
  for (Value* v : inits) body->add_arg(v->type);
  return op;
}

Op* Builder::create_if(Value* cond) {
  if (!cond->type->is_bool()) throw TypeError("if condition must be i1, got " + to_string(cond->type));
  return create(OpCode::If, {cond}, {}, 2);
}

Op* Builder::create_while(const std::vector<Value*>& inits) {
  Op* op = create(OpCode::While, inits, {}, 2);
  for (Value* v : inits) {
    op->region_block(0)->add_arg(v->type);
    op->region_block(1)->add_arg(v->type);
  }
  return op;
}

void Builder::yield(const std::vector<Value*>& values) { create(OpCode::Yield, values, {}); }

void Builder::condition(Value* cond, const std::vector<Value*>& values) {
  if (!cond->type->is_bool()) throw TypeError("while condition must be i1, got " + to_string(cond->type));
  std::vector<Value*> ops = {cond};
  ops.insert(ops.end(), values.begin(), values.end());
  create(OpCode::Condition, ops, {});
}

void Builder::ret(const std::vector<Value*>& values) { create(OpCode::Return, values, {}); }

}  // namespace opencute::ir

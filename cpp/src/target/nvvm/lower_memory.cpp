// NVVM lowering of the memory family: Load, Store, PtrAdd, PtrToInt, IntToPtr, Alloca, SmemAlloc,
// DynSmem, DynSmemSize and Atomic.
//   * Accesses use mem_type (nvvm_types.h): booleans are bytes, scalar f16 is i16. Vectors of
//     8- and 16-bit lanes other than f16 are accessed as 32-bit words where the alignment allows,
//     so that NVPTX emits 128-bit accesses for them as it does for `<8 x half>`.
//   * Pointer arithmetic is a typed getelementptr where LLVM's layout agrees with the IR's
//     (natural_layout) and byte arithmetic otherwise.
//   * Allocas are arrays at the top of the entry block, used through generic pointers; static
//     shared memory is one internal addrspace(3) global per SmemAlloc, dynamic shared memory one
//     extern array for every kernel of the module.
//   * Atomics are PTX `atom` through inline assembly (memory order, scope, 16-bit float forms).
#include <algorithm>
#include <string>
#include <vector>

#include "ir/arch_attributes.h"
#include "target/nvvm/op_lowering.h"

namespace opencute::target {

using ir::AddrSpace;
using ir::Op;
using ir::OpCode;
using ir::Type;
using ir::Value;

namespace {

// The pointer re-typed so that it points at `value_type` (e.g. a vector of its elements).
std::string retyped_pointer(KernelLowering& k, Type ptr_type, Type value_type, const std::string& p) {
  if (mem_type(ptr_type->element) == mem_type(value_type)) return p;
  return k.emit_def("bitcast " + llvm_type(ptr_type) + " " + p + " to " + pointer_text(value_type, ptr_type->space));
}

// The alignment stated on an access. Scalars narrower than 32 bits state at most four times
// their size (see mem_type for the libNVVM limit behind it); explicit vector accesses keep the
// full alignment.
int access_align(Type ptr_type, Type value_type) {
  int align = pow2_align(ptr_type->align);
  if (!value_type->is_vector() && value_type->min_align() < 4) align = std::min(align, 4 * value_type->byte_size());
  return align;
}

// Vectors of 8- and 16-bit lanes other than f16 (bf16, fp8, small ints) are accessed as
// 32-bit words when the pointer allows it: NVPTX splits `<8 x i16>` into two 64-bit accesses
// (a bf16 epilogue then stores with STS.64 / STG.64 where f16's `<8 x half>` gets 128-bit ones).
std::string word_access_type(Type ptr_type, Type value_type) {
  if (!value_type->is_vector() || value_type->element->is_bool() || value_type->element->is_f16()) return {};
  int bits = value_type->width;
  int lane_bits = value_type->element->width;
  if ((lane_bits != 8 && lane_bits != 16) || bits % 32 != 0 || bits > 128) return {};
  if (pow2_align(ptr_type->align) < 4) return {};
  return bits == 32 ? "i32" : "<" + std::to_string(bits / 32) + " x i32>";
}

void lower_load(const Op& op, KernelLowering& k) {
  Type pt = op.operands[0]->type, rt = op.result()->type;
  if (rt->is_sub_byte() && (!rt->is_vector() || rt->bit_size() % 8 != 0))  // single elements share a byte
    k.error(op, "a load of the packed sub-byte type " + ir::to_string(rt) + " (not whole bytes) is not supported");
  std::string words = word_access_type(pt, rt);
  if (!words.empty()) {
    int as = llvm_addrspace(pt->space);
    std::string wp = words + (as ? " addrspace(" + std::to_string(as) + ")*" : "*");
    std::string p = k.emit_def("bitcast " + llvm_type(pt) + " " + k.operand(op.operands[0]) + " to " + wp);
    std::string w =
        k.emit_def("load " + words + ", " + wp + " " + p + ", align " + std::to_string(access_align(pt, rt)));
    k.define(op, 0, k.emit_def("bitcast " + words + " " + w + " to " + llvm_type(rt)));
    return;
  }
  std::string p = retyped_pointer(k, pt, rt, k.operand(op.operands[0]));
  std::string M = mem_type(rt);
  std::string v = k.emit_def("load " + M + ", " + pointer_text(rt, pt->space) + " " + p + ", align " +
                             std::to_string(access_align(pt, rt)));
  if (ir::scalar_of(rt)->is_bool())
    v = k.emit_def("icmp ne " + M + " " + v + ", " + (rt->is_vector() ? "zeroinitializer" : "0"));
  else if (M != llvm_type(rt)) v = k.emit_def("bitcast " + M + " " + v + " to " + llvm_type(rt));
  k.define(op, 0, v);
}

void lower_store(const Op& op, KernelLowering& k) {
  Type vt = op.operands[0]->type, pt = op.operands[1]->type;
  if (vt->is_sub_byte() && (!vt->is_vector() || vt->bit_size() % 8 != 0))
    k.error(op, "a store of the packed sub-byte type " + ir::to_string(vt) + " (not whole bytes) is not supported");
  std::string v = k.operand(op.operands[0]);
  std::string words = word_access_type(pt, vt);
  if (!words.empty()) {
    int as = llvm_addrspace(pt->space);
    std::string wp = words + (as ? " addrspace(" + std::to_string(as) + ")*" : "*");
    std::string w = k.emit_def("bitcast " + llvm_type(vt) + " " + v + " to " + words);
    std::string p = k.emit_def("bitcast " + llvm_type(pt) + " " + k.operand(op.operands[1]) + " to " + wp);
    k.emit_line("store " + words + " " + w + ", " + wp + " " + p + ", align " + std::to_string(access_align(pt, vt)));
    return;
  }
  std::string M = mem_type(vt);
  if (ir::scalar_of(vt)->is_bool()) v = k.emit_def("zext " + llvm_type(vt) + " " + v + " to " + M);
  else if (M != llvm_type(vt)) v = k.emit_def("bitcast " + llvm_type(vt) + " " + v + " to " + M);
  std::string p = retyped_pointer(k, pt, vt, k.operand(op.operands[1]));
  k.emit_line("store " + M + " " + v + ", " + pointer_text(vt, pt->space) + " " + p + ", align " +
              std::to_string(access_align(pt, vt)));
}

std::string index_to_i64(KernelLowering& k, const Op& op, const Value* idx) {
  Type it = idx->type;
  std::string i = k.operand(idx);
  if (!it->is_int() || it->width > 64) k.error(op, "pointer offsets must be integers of at most 64 bits");
  if (it->width == 64) return i;
  // Constants are already extended by their signedness in the IR.
  if (ir::is_constant(idx)) return std::to_string(ir::constant_int(idx));
  return k.emit_def(std::string(it->is_signed ? "sext " : "zext ") + llvm_type(it) + " " + i + " to i64");
}

// A tensor-memory address advanced by `index` elements: TMEM is addressed in 32-bit columns, so
// elements narrower than 32 bits advance by index >> shift columns, the sub-column index kept in
// the high bits (CuTe's tmem_ptr: a rotate right by shift).
void lower_tmem_ptr_add(const Op& op, KernelLowering& k) {
  Type pt = op.operands[0]->type;
  std::string idx = k.operand(op.operands[1]);
  Type it = op.operands[1]->type;
  if (it->width > 32) idx = k.emit_def("trunc " + llvm_type(it) + " " + idx + " to i32");
  else if (it->width < 32) idx = k.emit_def("sext " + llvm_type(it) + " " + idx + " to i32");
  int bits = pt->element->bit_size(), shift = 0;
  while (bits < 32 && (32 >> shift) > bits) ++shift;
  if (shift)
    idx = k.emit_def("call i32 @llvm.fshr.i32(i32 " + idx + ", i32 " + idx + ", i32 " + std::to_string(shift) + ")"),
    k.module().declare("i32", "llvm.fshr.i32", "i32, i32, i32");
  k.define(op, 0, k.emit_def("add i32 " + k.operand(op.operands[0]) + ", " + idx));
}

void lower_ptr_add(const Op& op, KernelLowering& k) {
  Type pt = op.operands[0]->type;
  if (pt->space == ir::AddrSpace::Tmem) return lower_tmem_ptr_add(op, k);
  std::string p = k.operand(op.operands[0]);
  std::string idx = index_to_i64(k, op, op.operands[1]);
  if (natural_layout(pt->element)) {
    k.define(op, 0,
             k.emit_def("getelementptr " + mem_type(pt->element) + ", " + llvm_type(pt) + " " + p + ", i64 " + idx));
    return;
  }
  std::string bytes_ptr = pointer_text(ir::int_type(8), pt->space);
  std::string b = k.emit_def("bitcast " + llvm_type(pt) + " " + p + " to " + bytes_ptr);
  std::string off =
      pt->element->is_sub_byte()  // a whole number of bytes (checked when built)
          ? k.emit_def("ashr exact i64 " +
                       k.emit_def("mul i64 " + idx + ", " + std::to_string(pt->element->bit_size())) + ", 3")
          : k.emit_def("mul i64 " + idx + ", " + std::to_string(pt->element->byte_size()));
  std::string g = k.emit_def("getelementptr i8, " + bytes_ptr + " " + b + ", i64 " + off);
  k.define(op, 0, k.emit_def("bitcast " + bytes_ptr + " " + g + " to " + llvm_type(op.result()->type)));
}

void lower_alloca(const Op& op, KernelLowering& k) {
  Type rt = op.result()->type;
  if (!rt->is_pointer()) k.error(op, "alloca must produce a pointer");
  if (op.int_attr < 0) k.error(op, "negative element count");
  Type e = rt->element;
  std::string align = std::to_string(pow2_align(std::max(rt->align, e->min_align())));
  if (natural_layout(e)) {
    std::string arr = "[" + std::to_string(op.int_attr) + " x " + mem_type(e) + "]";
    std::string a = k.emit_def_in_entry("alloca " + arr + ", align " + align);
    k.define(op, 0, k.emit_def_in_entry("getelementptr inbounds " + arr + ", " + arr + "* " + a + ", i64 0, i64 0"));
    return;
  }
  std::string arr = "[" + std::to_string(e->array_bytes(op.int_attr)) + " x i8]";
  std::string a = k.emit_def_in_entry("alloca " + arr + ", align " + align);
  std::string b = k.emit_def_in_entry("getelementptr inbounds " + arr + ", " + arr + "* " + a + ", i64 0, i64 0");
  k.define(op, 0, k.emit_def_in_entry("bitcast i8* " + b + " to " + mem_type(e) + "*"));
}

// PTX `atom` through inline assembly: it spells the memory order and scope exactly and has the
// 16-bit float forms that LLVM 7's atomicrmw lacks.
void lower_atomic(const Op& op, KernelLowering& k) {
  const Value* ptr = op.operands[0];
  Type t = op.result()->type;
  auto kind = ir::AtomicKind(op.int_attr);
  std::string space = ptr->type->space == AddrSpace::Gmem   ? ".global"
                      : ptr->type->space == AddrSpace::Smem ? ".shared"
                                                            : "";
  const int w = t->width;
  std::string suffix, reg;
  if (t->is_float()) {
    suffix = t->is_f16() ? "noftz.f16" : t->is_bf16() ? "noftz.bf16" : t->is_f64() ? "f64" : "f32";
    reg = w == 16 ? "h" : w == 64 ? "d" : "f";
  } else {
    reg = w == 16 ? "h" : w == 64 ? "l" : "r";
    switch (kind) {
      case ir::AtomicKind::Add: suffix = "u"; break;  // two's complement: signed adds alike
      case ir::AtomicKind::Max: case ir::AtomicKind::Min: suffix = t->is_signed ? "s" : "u"; break;
      case ir::AtomicKind::Inc: case ir::AtomicKind::Dec: suffix = "u"; break;
      default: suffix = "b"; break;
    }
    suffix += std::to_string(w);
  }
  std::string asm_text = std::string("atom.") + ir::memory_order_name(ir::MemoryOrder(op.ints.at(0))) + "." +
                         ir::memory_scope_name(ir::MemoryScope(op.ints.at(1))) + space + "." +
                         ir::atomic_kind_name(kind) + "." + suffix + " $0, [$1], $2";
  std::string constraints = "=" + reg + ",l," + reg;
  if (kind == ir::AtomicKind::Cas) {
    asm_text += ", $3";
    constraints += "," + reg;
  }
  asm_text += ";";
  constraints += ",~{memory}";
  // 16-bit floats travel through the asm as their bits.
  std::string reg_type = t->is_f16() ? "i16" : llvm_type(t);
  std::string address = k.emit_def("ptrtoint " + llvm_type(ptr->type) + " " + k.operand(ptr) + " to i64");
  std::string args = "i64 " + address;
  for (size_t i = 1; i < op.operands.size(); ++i) {
    std::string v = k.operand(op.operands[i]);
    if (t->is_f16()) v = k.emit_def("bitcast half " + v + " to i16");
    args += ", " + reg_type + " " + v;
  }
  std::string r =
      k.emit_def("call " + reg_type + " asm sideeffect \"" + asm_text + "\", \"" + constraints + "\"(" + args + ")");
  if (t->is_f16()) r = k.emit_def("bitcast i16 " + r + " to half");
  k.define(op, 0, r);
}

void lower_smem_alloc(const Op& op, KernelLowering& k) {
  Type rt = op.result()->type;
  Type e = rt->element;
  std::string align = std::to_string(pow2_align(std::max(rt->align, e->min_align())));
  std::string name =
      global_ref("__opencute_smem." + k.function().name + "." + std::to_string(k.module().next_smem_global++));
  std::string arr = natural_layout(e) ? "[" + std::to_string(op.int_attr) + " x " + mem_type(e) + "]"
                                      : "[" + std::to_string(e->array_bytes(op.int_attr)) + " x i8]";
  k.module().global_lines.push_back(name + " = internal addrspace(3) global " + arr + " undef, align " + align);
  std::string first =
      k.emit_def("getelementptr inbounds " + arr + ", " + arr + " addrspace(3)* " + name + ", i64 0, i64 0");
  std::string first_type = natural_layout(e) ? llvm_type(rt) : pointer_text(ir::int_type(8), AddrSpace::Smem);
  k.define(
      op, 0,
      first_type == llvm_type(rt) ? first : k.emit_def("bitcast " + first_type + " " + first + " to " + llvm_type(rt)));
}

void lower_dyn_smem(const Op& op, KernelLowering& k) {
  Type rt = op.result()->type;
  // One extern array serves every kernel; its alignment is the largest any of them asks for.
  k.module().dyn_smem_align = std::max({k.module().dyn_smem_align, 16, pow2_align(rt->align)});
  k.define(op, 0, k.emit_def("bitcast [0 x i8] addrspace(3)* @__opencute_dyn_smem to " + llvm_type(rt)));
}

// A tensor-memory pointer is its i32 address: widened or narrowed like an integer.
std::string resize_int(KernelLowering& k, const std::string& v, int from, int to) {
  if (from == to) return v;
  return k.emit_def(std::string(from < to ? "zext i" : "trunc i") + std::to_string(from) + " " + v + " to i" +
                    std::to_string(to));
}

void lower_ptr_to_int(const Op& op, KernelLowering& k) {
  Type pt = op.operands[0]->type, rt = op.result()->type;
  if (pt->space == ir::AddrSpace::Tmem) return k.define(op, 0, resize_int(k, k.operand(op.operands[0]), 32, rt->width));
  k.define(op, 0, k.emit_def("ptrtoint " + llvm_type(pt) + " " + k.operand(op.operands[0]) + " to " + llvm_type(rt)));
}

void lower_int_to_ptr(const Op& op, KernelLowering& k) {
  Type it = op.operands[0]->type, rt = op.result()->type;
  if (rt->space == ir::AddrSpace::Tmem) return k.define(op, 0, resize_int(k, k.operand(op.operands[0]), it->width, 32));
  k.define(op, 0, k.emit_def("inttoptr " + llvm_type(it) + " " + k.operand(op.operands[0]) + " to " + llvm_type(rt)));
}

void lower_dyn_smem_size(const Op& op, KernelLowering& k) {
  k.define(op, 0, k.emit_def("call i32 asm \"mov.u32 $0, %dynamic_smem_size;\", \"=r\"()"));
}

}  // namespace

void register_memory_lowerings(LoweringTable& t) {
  t.add(OpCode::Load, lower_load);
  t.add(OpCode::Store, lower_store);
  t.add(OpCode::PtrAdd, lower_ptr_add);
  t.add(OpCode::PtrToInt, lower_ptr_to_int);
  t.add(OpCode::IntToPtr, lower_int_to_ptr);
  t.add(OpCode::Alloca, lower_alloca);
  t.add(OpCode::SmemAlloc, lower_smem_alloc);
  t.add(OpCode::DynSmem, lower_dyn_smem);
  t.add(OpCode::DynSmemSize, lower_dyn_smem_size);
  t.add(OpCode::Atomic, lower_atomic);
}

}  // namespace opencute::target

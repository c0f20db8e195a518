#include "cute/atom/copy_sm80.h"

#include "cute/copy_predicate.h"
#include "cute/pointer.h"
#include "dsl/tracer.h"
#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;
using dsl::Num;

namespace {

L::Layout lay(const L::IntTuple& shape, const L::IntTuple& stride) { return L::Layout(shape, stride); }

// ldmatrix's (thread, bit) layouts (CuTe's SM75_U32x{1,2,4}_LDSM_N / SM75_U16x{2,4,8}_LDSM_T):
// thread t names row t of the matrices (x1: threads 0-7, x2: 0-15; the others repeat them),
// and receives 32 bits per matrix of the 8x8 b16 fragment, row-major in the reference.
L::Layout ldmatrix_src_bits(int num) {
  if (num == 1) return lay({{8, 4}, 128}, {{128, 0}, 1});
  if (num == 2) return lay({{16, 2}, 128}, {{128, 0}, 1});
  return lay({32, 128}, {128, 1});
}

L::Layout ldmatrix_dst_bits(int num, bool trans) {
  if (!trans) {
    if (num == 1) return lay({32, 32}, {32, 1});
    return lay({32, {32, num}}, {32, {1, 1024}});
  }
  if (num == 1) return lay({{4, 8}, {16, 2}}, {{256, 16}, {1, 128}});
  return lay({{4, 8}, {16, 2, num}}, {{256, 16}, {1, 128, 1024}});
}

[[noreturn]] void atom_error(const std::string& code, const std::string& msg) { throw dsl::UserError(code, msg); }

std::string dtype_text(ir::Type t) { return ir::to_string(t); }

void check_matrices(const char* what, int num) {
  if (num != 1 && num != 2 && num != 4)
    atom_error("INVALID_COPY_ATOM", std::string(what) + ": num_matrices must be 1, 2 or 4, got " + std::to_string(num));
}

int element_bits(ir::Type t) { return t->is_bool() ? 8 : t->width; }

// The builder of the kernel being traced: these are device instructions.
ir::Builder& kernel_builder(const std::string& what) {
  dsl::Tracer& t = dsl::Tracer::require(what.c_str());
  if (!t.in_kernel())
    throw dsl::UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
  return trace_builder(what.c_str());
}

}  // namespace

CopyAtom make_cp_async_atom(ir::Type value_type, int num_bits, int cache_mode) {
  CopyAtom a;
  a.op = CopyOp::CpAsync;
  a.op_name = "cp.async";
  a.value_type = value_type;
  a.num_bits = num_bits > 0 ? num_bits : element_bits(value_type);
  a.cache_mode = cache_mode;
  if (a.num_bits != 32 && a.num_bits != 64 && a.num_bits != 128)
    atom_error("INVALID_COPY_ATOM", "CopyG2SOp: cp.async copies 32, 64 or 128 bits (4, 8 or 16 bytes) per thread, "
                                    "got num_bits_per_copy=" + std::to_string(a.num_bits));
  if (a.num_bits % element_bits(value_type) != 0)
    atom_error("INVALID_COPY_ATOM", "CopyG2SOp: num_bits_per_copy=" + std::to_string(a.num_bits) +
                                        " is not a multiple of the element width " +
                                        std::to_string(element_bits(value_type)) + " of " + dtype_text(value_type));
  if (cache_mode == 1 && a.num_bits != 128)
    atom_error("INVALID_COPY_ATOM", "CopyG2SOp: LoadCacheMode.GLOBAL (cp.async.cg) copies 128 bits only, got "
                                    "num_bits_per_copy=" + std::to_string(a.num_bits));
  a.src_bits = a.dst_bits = a.ref_bits = lay({1, a.num_bits}, {0, 1});
  return a;
}

CopyAtom make_ldmatrix_atom(ir::Type value_type, int num_matrices, bool transpose, bool eight_bit, int unpack_bits) {
  const char* name = eight_bit ? "LdMatrix8x16x8bOp" : "LdMatrix8x8x16bOp";
  check_matrices(name, num_matrices);
  if (unpack_bits) {
    if (!eight_bit || unpack_bits != 4)
      atom_error("NOT_SUPPORTED", std::string(name) + ": unpack_bits=" + std::to_string(unpack_bits) +
                                      " is not available (LdMatrix8x16x8bOp unpacks 4-bit elements: unpack_bits=4)");
    const support::Arch& arch = dsl::Tracer::current_target_arch();
    if (!arch.empty() && !(arch.number >= 100 && (arch.suffix == 'a' || arch.suffix == 'f')))
      atom_error("UNSUPPORTED_ARCH", std::string(name) + ": ldmatrix .b8x16.b4x16_p64 (unpack_bits=4) needs sm_100a "
                                                         "or newer, but the program is compiled for " + arch.name);
    if (element_bits(value_type) != 8)
      atom_error("TYPE_MISMATCH", std::string(name) + " with unpack_bits=4 widens each 4-bit element to a byte: its "
                                                      "value type must be 8 bits, got " + dtype_text(value_type));
  }
  int bits = element_bits(value_type);
  // 16-bit units may carry narrower values untransposed (two 8-bit or four 4-bit values each, as
  // NVIDIA's GeForce block-scaled GEMMs load Float4E2M1FN operands): the copy moves the units.
  const bool packed_units = !eight_bit && !transpose && (bits == 4 || bits == 8);
  if (bits != (eight_bit ? 8 : 16) && !packed_units)
    atom_error("TYPE_MISMATCH", std::string(name) + " moves " + (eight_bit ? "8" : "16") +
                                    "-bit elements, but the atom's value type " + dtype_text(value_type) + " has " +
                                    std::to_string(bits) + " bits");
  if (eight_bit && transpose)
    atom_error("INVALID_COPY_ATOM", "LdMatrix8x16x8bOp: ldmatrix .trans transposes 16-bit elements; 8-bit elements "
                                    "cannot be transposed");
  CopyAtom a;
  a.op = CopyOp::LdMatrix;
  a.op_name = name;
  a.value_type = value_type;
  a.num_matrices = num_matrices;
  a.transpose = transpose;
  a.unpack_bits = unpack_bits;
  a.num_bits = 128;
  a.thr_id_layout = L::Layout(32, 1);
  a.src_bits = ldmatrix_src_bits(num_matrices);
  a.dst_bits = a.ref_bits = ldmatrix_dst_bits(num_matrices, transpose);
  return a;
}

// ldmatrix .m16n16 .trans .b8 (PTX ISA: each thread loads 4 consecutive columns across 2 rows of
// the transposed matrix): thread t names row t % 16 of matrix t / 16 (x1: threads 16-31 repeat
// 0-15), 16 bytes a row in the reference; thread 4c + q receives, as byte i + 4r + 8m of its
// result, row 4q + i of matrix m at byte c + 8r.
CopyAtom make_ldmatrix16x16_atom(ir::Type value_type, int num_matrices, bool transpose) {
  const char* name = "LdMatrix16x16x8bOp";
  if (num_matrices != 1 && num_matrices != 2)
    atom_error("INVALID_COPY_ATOM", std::string(name) + ": num_matrices must be 1 or 2, got " +
                                        std::to_string(num_matrices));
  if (element_bits(value_type) != 8)
    atom_error("TYPE_MISMATCH", std::string(name) + " moves 8-bit elements, but the atom's value type " +
                                    dtype_text(value_type) + " has " + std::to_string(element_bits(value_type)) +
                                    " bits");
  if (!transpose) atom_error("INVALID_COPY_ATOM", std::string(name) + ": ldmatrix .m16n16 always transposes (transpose=True)");
  const support::Arch& arch = dsl::Tracer::current_target_arch();
  if (!arch.empty() && !(arch.number >= 100 && (arch.suffix == 'a' || arch.suffix == 'f')))
    atom_error("UNSUPPORTED_ARCH", std::string(name) + ": ldmatrix .m16n16 needs sm_100a or newer, but the program "
                                                       "is compiled for " + arch.name);
  CopyAtom a;
  a.op = CopyOp::LdMatrix;
  a.op_name = name;
  a.value_type = value_type;
  a.num_matrices = num_matrices;
  a.transpose = true;
  a.wide_matrix = true;
  a.num_bits = 128;
  a.thr_id_layout = L::Layout(32, 1);
  a.src_bits = num_matrices == 1 ? lay({{16, 2}, 128}, {{128, 0}, 1}) : lay({32, 128}, {128, 1});
  a.dst_bits = a.ref_bits = num_matrices == 1 ? lay({{4, 8}, {8, 4, 2}}, {{512, 8}, {1, 128, 64}})
                                               : lay({{4, 8}, {8, 4, 2, 2}}, {{512, 8}, {1, 128, 64, 2048}});
  return a;
}

CopyAtom make_stmatrix_atom(ir::Type value_type, int num_matrices, bool transpose) {
  check_matrices("StMatrix8x8x16bOp", num_matrices);
  int bits = element_bits(value_type);
  // 32-bit values: the atom's layouts recast by bits, as CuTe's Copy_Atom<SM90_U32x4_STSM_N, float>
  // (NVIDIA's Hopper GEMMs build one for an f32 C only to shape make_tiled_copy_C_atom; their
  // stores use another atom). Copying with it is refused (cute.copy).
  if (bits != 16 && !(bits == 32 && !transpose))
    atom_error("TYPE_MISMATCH", "StMatrix8x8x16bOp moves 16-bit elements, but the atom's value type " +
                                    dtype_text(value_type) + " has " + std::to_string(bits) + " bits");
  const support::Arch& arch = dsl::Tracer::current_target_arch();
  if (!arch.empty() && !arch.has_stmatrix())
    atom_error("UNSUPPORTED_ARCH", "StMatrix8x8x16bOp: stmatrix needs sm_90 or newer, but the program is compiled "
                                   "for " + arch.name);
  CopyAtom a;
  a.op = CopyOp::StMatrix;
  a.op_name = "StMatrix8x8x16bOp";
  a.value_type = value_type;
  a.num_matrices = num_matrices;
  a.transpose = transpose;
  a.num_bits = 32 * num_matrices;
  a.thr_id_layout = L::Layout(32, 1);
  a.src_bits = a.ref_bits = ldmatrix_dst_bits(num_matrices, transpose);
  a.dst_bits = ldmatrix_src_bits(num_matrices);
  return a;
}

namespace {

L::Layout group_rest(const L::Layout& l) {
  if (l.rank() == 1) return L::Layout(L::IntTuple{l.shape, 1}, L::IntTuple{l.stride, 0});
  return L::group_modes(l, 1, l.rank());
}

[[noreturn]] void copy_error(const std::string& msg) { throw L::LayoutError("copy: " + msg); }

// True when values [first, first + n) of the value mode are consecutive elements in memory.
bool contiguous(const L::Layout& vmode, int64_t first, int n) {
  L::Int base = vmode(L::IntTuple(first)).as_int();
  if (!base.is_static()) return false;
  for (int i = 1; i < n; ++i) {
    L::Int o = vmode(L::IntTuple(first + i)).as_int();
    if (!o.is_static() || o.value() != base.value() + i) return false;
  }
  return true;
}

// The pointer to one atom call's first element, checked and typed with the call's alignment.
ir::Value* call_pointer(ir::Builder& b, const Tensor& t, const L::Layout& l, int64_t k, int64_t r, int bytes,
                        const std::string& what) {
  L::Int off = l(L::IntTuple{L::IntTuple(k), L::IntTuple(r)}).as_int();
  // A swizzled shared-memory tensor: the call's first element goes through the swizzle like any
  // element access (the swizzle keeps runs of 2^base aligned, so the rest of the call follows).
  ir::Value* p = t.swizzle ? element_address(with_layout(t, l), L::IntTuple{L::IntTuple(k), L::IntTuple(r)})
                           : offset_pointer(b, t.ptr, off);
  const int64_t ebits = t.element()->bit_size();  // booleans: 8; packed elements count in bits
  if (off.is_static() && t.ptr->type->align % bytes == 0 && (off.value() * ebits) % (int64_t(bytes) * 8) != 0)
    throw dsl::UserError("MISALIGNED_COPY", what + " moves " + std::to_string(bytes) +
                                                " bytes at once, but its address is misaligned: element offset " +
                                                std::to_string(off.value()) + " of " + to_string(t) +
                                                " is not a multiple of " + std::to_string(bytes) + " bytes");
  if (p->type->align < bytes) p = b.bitcast(p, ir::pointer_type(p->type->element, p->type->space, bytes));
  return p;
}

ir::Value* element_pointer(ir::Builder& b, const Tensor& t, const L::Layout& l, int64_t k, int64_t r) {
  if (t.swizzle) return element_address(with_layout(t, l), L::IntTuple{L::IntTuple(k), L::IntTuple(r)});
  return offset_pointer(b, t.ptr, l(L::IntTuple{L::IntTuple(k), L::IntTuple(r)}).as_int());
}

}  // namespace

void copy_sm80(const CopyAtom& atom, const Tensor& src, const Tensor& dst, const std::optional<Tensor>& pred) {
  const std::string& name = atom.op_name;
  if (!src.is_memory() || !dst.is_memory())
    throw dsl::UserError("TYPE_MISMATCH", "copy needs memory tensors, got " + to_string(src) + " and " +
                                              to_string(dst));
  const int vbits = atom.value_bits();
  for (const Tensor* t : {&src, &dst})
    if (element_bits(t->element()) != vbits)
      throw dsl::UserError("TYPE_MISMATCH", name + " atom of " + dtype_text(atom.value_type) +
                                                " used with a tensor of " + dtype_text(t->element()) + ": " +
                                                to_string(*t));
  auto space_error = [&](const char* side, const char* want, const Tensor& t) {
    const char* direction = atom.op == CopyOp::CpAsync    ? "global to shared"
                            : atom.op == CopyOp::LdMatrix ? "shared memory to registers"
                                                          : "registers to shared memory";
    throw dsl::UserError("COPY_MEMSPACE", name + " copies " + direction + ": its " + side + " must be in " + want +
                                              " memory, got " + to_string(t));
  };
  if (atom.op == CopyOp::CpAsync) {
    if (src.space() != ir::AddrSpace::Gmem && src.space() != ir::AddrSpace::Generic) space_error("source", "global", src);
    if (dst.space() != ir::AddrSpace::Smem) space_error("destination", "shared", dst);
  } else if (atom.op == CopyOp::LdMatrix) {
    if (src.space() != ir::AddrSpace::Smem) space_error("source", "shared", src);
  } else if (dst.space() != ir::AddrSpace::Smem) {
    space_error("destination", "shared", dst);
  }
  if (pred && atom.op != CopyOp::CpAsync)
    throw dsl::UserError("INVALID_COPY", name + " is warp-collective: all 32 lanes execute it, it cannot be predicated");
  if (src.layout.rank() != dst.layout.rank())
    copy_error("source and destination ranks differ: " + to_string(src) + " vs " + to_string(dst));

  if (atom.op == CopyOp::LdMatrix && !atom.wide_matrix && vbits < 16 && atom.op_name == "LdMatrix8x8x16bOp") {
    // Values narrower than the 16-bit units ldmatrix moves: the same copy of the units.
    CopyAtom units = atom;
    units.value_type = ir::int_type(16);
    return copy_sm80(units, recast_tensor(src, units.value_type), recast_tensor(dst, units.value_type), pred);
  }
  L::Layout sv = group_rest(src.layout), dv = group_rest(dst.layout);
  L::Int sn0 = L::size(sv, {0}), dn0 = L::size(dv, {0}), sn1 = L::size(sv, {1}), dn1 = L::size(dv, {1});
  if (!sn0.is_static() || !dn0.is_static() || !sn1.is_static() || !dn1.is_static())
    copy_error("the partitions must have static shapes: " + to_string(src) + " and " + to_string(dst));
  const int ns = atom.num_src_values(), nd = atom.num_dst_values();
  if (sn0.value() % ns != 0 || dn0.value() % nd != 0 || sn0.value() / ns != dn0.value() / nd)
    copy_error("the value modes of " + to_string(src) + " and " + to_string(dst) + " do not split into " + name +
               " calls of " + std::to_string(ns) + " source and " + std::to_string(nd) + " destination values");
  if (sn1.value() != dn1.value())
    copy_error("rest modes differ in size: " + to_string(src) + " vs " + to_string(dst));
  const int64_t calls = sn0.value() / ns, nrest = sn1.value();
  std::optional<CopyPredicate> guard_of;
  if (pred) guard_of.emplace(*pred, calls, nrest, "copy");
  L::Layout svm = sv[0], dvm = dv[0];
  ir::Builder& b = kernel_builder("copy with " + name);
  for (int64_t r = 0; r < nrest; ++r) {
    for (int64_t c = 0; c < calls; ++c) {
      const int64_t ks = c * ns, kd = c * nd;
      if (atom.op == CopyOp::CpAsync) {
        const int bytes = atom.num_bits / 8;
        if (!contiguous(svm, ks, ns) || !contiguous(dvm, kd, nd))
          copy_error(name + " moves " + std::to_string(ns) + " consecutive elements per call, but the values of " +
                     to_string(src) + " or " + to_string(dst) + " are not consecutive in memory");
        ir::Value* sp = call_pointer(b, src, sv, ks, r, bytes, name);
        ir::Value* dp = call_pointer(b, dst, dv, kd, r, bytes, name);
        ir::Value* size = b.const_int(ir::i32(), bytes);
        if (pred) {
          // CuTe's SM80_CP_ASYNC_*_ZFILL: a false predicate still writes, zeros (source size 0).
          Num p = dsl::to_boolean(guard_of->at(r, c));
          if (p.is_static) size = b.const_int(ir::i32(), p.s.i ? bytes : 0);
          else size = b.select(p.value, size, b.const_int(ir::i32(), 0));
        }
        ir::Op* op = b.create(ir::OpCode::CpAsync, {dp, sp, size}, {});
        op->int_attr = bytes;
        op->ints = {atom.cache_mode == 1 ? 1 : 0};
      } else if (atom.op == CopyOp::LdMatrix) {
        if (!contiguous(svm, ks, ns))
          copy_error(name + ": each thread's " + std::to_string(ns) + " source values are one 16-byte matrix row "
                     "and must be consecutive in shared memory: " + to_string(src));
        ir::Value* row = call_pointer(b, src, sv, ks, r, 16, name);
        ir::Op* op = b.create(ir::OpCode::LdMatrix, {row}, {ir::vector_type(atom.value_type, nd)});
        op->int_attr = atom.num_matrices;
        op->ints = {atom.transpose ? 1 : 0, atom.wide_matrix ? 1 : 0};
        if (atom.unpack_bits) op->ints.push_back(atom.unpack_bits);
        ir::Value* v = op->result();
        // Runs of consecutive register values are stored as one vector (up to 16 bytes), so that
        // LLVM splits the fragment into the registers ldmatrix filled, not 16-bit pieces.
        const bool vectorize = dst.space() == ir::AddrSpace::Rmem && !dst.swizzle;
        for (int i = 0; i < nd;) {
          int len = 1;
          while (vectorize && i + 2 * len <= nd && 2 * len * vbits <= 128 && contiguous(dvm, kd + i, 2 * len)) len *= 2;
          ir::Value* run = nullptr;
          for (int j = 0; j < len; ++j) {
            ir::Value* x = b.vec_extract(v, i + j);
            if (dst.element() != atom.value_type) x = b.bitcast(x, dst.element());
            run = len == 1 ? x : j == 0 ? b.vec_splat(x, len) : b.vec_insert(run, x, j);
          }
          b.store(run, element_pointer(b, dst, dv, kd + i, r));
          i += len;
        }
      } else {
        if (element_bits(atom.value_type) != 16)
          throw dsl::UserError("TYPE_MISMATCH", name + " moves 16-bit elements; an atom of " +
                                                    dtype_text(atom.value_type) + " values only lays out a tiled copy "
                                                    "(make_tiled_copy_C_atom) and cannot copy");
        if (!contiguous(dvm, kd, nd))
          copy_error(name + ": each thread's " + std::to_string(nd) + " destination values are one 16-byte matrix "
                     "row and must be consecutive in shared memory: " + to_string(dst));
        ir::Value* row = call_pointer(b, dst, dv, kd, r, 16, name);
        ir::Value* v = nullptr;
        for (int i = 0; i < ns; ++i) {
          ir::Value* x = b.load(element_pointer(b, src, sv, ks + i, r), src.element());
          if (src.element() != atom.value_type) x = b.bitcast(x, atom.value_type);
          v = i == 0 ? b.vec_splat(x, ns) : b.vec_insert(v, x, i);
        }
        ir::Op* op = b.create(ir::OpCode::StMatrix, {row, v}, {});
        op->int_attr = atom.num_matrices;
        op->ints = {atom.transpose ? 1 : 0};
      }
    }
  }
}

void cp_async_commit_group() {
  kernel_builder("cp_async_commit_group").create(ir::OpCode::CpAsyncCommit, {}, {});
}

void cp_async_wait_group(int64_t n) {
  if (n < 0)
    throw dsl::UserError("INVALID_ARGUMENT", "cp_async_wait_group needs a number of pending groups >= 0, got " +
                                                 std::to_string(n));
  ir::Op* op = kernel_builder("cp_async_wait_group").create(ir::OpCode::CpAsyncWait, {}, {});
  op->int_attr = n;
}

}  // namespace opencute::cute

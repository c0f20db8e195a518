#include "emulator/sm90_tensormap.h"

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "emulator/diagnostics.h"
#include "emulator/execution_state.h"
#include "emulator/op_handlers.h"

namespace opencute::emulator {

namespace {

using ir::OpCode;

Scalar& at(Sm90WarpContext& w, int reg, int lane) { return w.regs[size_t(reg) * kWarp + size_t(lane)]; }

// The 128 bytes of a slot at `addr`: inside the block's shared memory or checked as a global access.
char* slot_bytes(Sm90WarpContext& w, int lane, uintptr_t addr, bool store, const char* what, bool shared) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(w.smem);
  if (!addr) w.fail(lane, std::string(what) + " through a null tensor map pointer");
  if (addr % 64) w.fail(lane, std::string(what) + ": the tensor map at " + std::to_string(addr) + " is not 64-byte aligned");
  if (shared && (addr < base || addr >= base + w.smem_size))
    w.fail(lane, std::string(what) + ": the shared-memory tensor map pointer lies outside the block's " +
                     std::to_string(w.smem_size) + " bytes of shared memory (offset " +
                     std::to_string(int64_t(addr - base)) + ")");
  if (addr >= base && addr < base + w.smem_size) {
    if (addr + sizeof(TmaDescriptorImage) > base + w.smem_size)
      w.fail(lane, std::string(what) + ": the 128-byte tensor map runs past the block's shared memory");
  } else {
    addr = w.check_global(lane, addr, sizeof(TmaDescriptorImage), store);
  }
  return reinterpret_cast<char*>(addr);
}

void replace(const Inst& i, Sm90WarpContext& w, int lane) {
  char* p = slot_bytes(w, lane, uintptr_t(at(w, i.a, lane).i), true, "update_tma_descriptor", i.space == ir::AddrSpace::Smem);
  TmaDescriptorImage m;
  std::memcpy(&m, p, sizeof m);
  if (m.magic != kTmaImageMagic)
    w.fail(lane, "update_tma_descriptor (tensormap.replace) on memory that holds no tensor map: copy one there first "
                 "(cpasync.copy_tensormap / TensorMapManager.init_tensormap_from_atom)");
  const int64_t v = at(w, i.b, lane).i;
  const int64_t ord = i.imm % 8;
  switch (ir::TmaDescField(i.imm / 8)) {
    case ir::TmaDescField::GlobalAddress:
      if (uint64_t(v) % 16) w.fail(lane, "update_tma_descriptor: the new global address " + std::to_string(v) +
                                             " is not 16-byte aligned");
      m.global_address = uint64_t(v);
      break;
    case ir::TmaDescField::GlobalDim:
      if (ord >= m.rank) w.fail(lane, "update_tma_descriptor: dimension " + std::to_string(ord) + " of a rank-" +
                                          std::to_string(m.rank) + " tensor map");
      if (int32_t(v) < 1) w.fail(lane, "update_tma_descriptor: extent " + std::to_string(int32_t(v)) + " of dimension " +
                                           std::to_string(ord) + " is not positive");
      m.dims[ord] = uint32_t(v);
      break;
    case ir::TmaDescField::GlobalStride:
      if (ord + 1 >= m.rank) w.fail(lane, "update_tma_descriptor: the stride of dimension " + std::to_string(ord + 1) +
                                              " of a rank-" + std::to_string(m.rank) + " tensor map");
      if (v < 0 || v % 16)
        w.fail(lane, "update_tma_descriptor: the byte stride " + std::to_string(v) + " of dimension " +
                         std::to_string(ord + 1) + " is not a non-negative multiple of 16");
      m.strides[ord + 1] = uint64_t(v);
      break;
  }
  std::memcpy(p, &m, sizeof m);
}

}  // namespace

TmaDescriptorImage tma_descriptor_image(const TmaDescriptor& d) {
  TmaDescriptorImage m;
  m.rank = d.rank, m.elem_bytes = d.elem_bytes, m.swizzle_bytes = d.swizzle_bytes;
  m.data_type_plus_one = d.data_type + 1;
  m.invalid = uint32_t(d.invalid);
  m.global_address = d.global_address;
  for (int k = 0; k < 5; ++k) m.strides[k] = d.strides[k], m.dims[k] = uint32_t(d.dims[k]), m.box[k] = d.box[k];
  return m;
}

bool tma_descriptor_at(uintptr_t addr, TmaDescriptor* out) {
  if (!addr) return false;
  uint64_t head;
  std::memcpy(&head, reinterpret_cast<const void*>(addr), sizeof head);
  if (head == kTmaImageMagic) {
    TmaDescriptorImage m;
    std::memcpy(&m, reinterpret_cast<const void*>(addr), sizeof m);
    TmaDescriptor d;
    d.rank = m.rank, d.elem_bytes = m.elem_bytes, d.swizzle_bytes = m.swizzle_bytes;
    d.data_type = m.data_type_plus_one - 1;
    d.invalid = int32_t(m.invalid);
    d.global_address = m.global_address;
    for (int k = 0; k < 5; ++k) d.strides[k] = m.strides[k], d.dims[k] = m.dims[k], d.box[k] = m.box[k];
    *out = d;
    return true;
  }
  const auto* d = reinterpret_cast<const TmaDescriptor*>(addr);
  if (d->magic != kTmaDescriptorMagic) return false;
  *out = *d;
  return true;
}

void execute_sm90_tensormap(const Inst& i, Sm90WarpContext& w) {
  for (uint32_t m = w.mask; m; m &= m - 1) {
    const int l = __builtin_ctz(m);
    switch (i.code) {
      case OpCode::TmaDescCopy: {
        TmaDescriptor d;
        uintptr_t from = uintptr_t(at(w, i.a, l).i);
        if (w.tensor_map_address && from) from = w.tensor_map_address(l, from);
        if (!tma_descriptor_at(from, &d))
          w.fail(l, "copy_tensormap from a pointer that is not a TMA descriptor made by make_tiled_tma_atom");
        const TmaDescriptorImage img = tma_descriptor_image(d);
        std::memcpy(slot_bytes(w, l, uintptr_t(at(w, i.b, l).i), true, "copy_tensormap", i.space == ir::AddrSpace::Smem), &img,
                    sizeof img);
        break;
      }
      case OpCode::TmaDescReplace: replace(i, w, l); break;
      case OpCode::TmaDescCpFenceRelease: {
        const char* src = slot_bytes(w, l, uintptr_t(at(w, i.b, l).i), false, "cp_fence_tma_desc_release", true);
        char* dst = slot_bytes(w, l, uintptr_t(at(w, i.a, l).i), true, "cp_fence_tma_desc_release", false);
        std::memmove(dst, src, sizeof(TmaDescriptorImage));
        break;
      }
      default: w.fail(l, std::string("not a tensor-map op: ") + ir::opcode_name(i.code));
    }
  }
}

namespace {

// True when the integer `v` is computed from a pointer's address (ptr.toint() plus offsets, made
// warp-uniform ...): a pointer rebuilt from it points into the same buffer. Integers read from
// memory, kernel arguments and loop-carried values are of unknown origin.
bool derived_from_pointer(const ir::Value* v, int depth = 0) {
  const ir::Op* d = v->def;
  if (!d || depth > 64) return false;
  switch (d->code) {
    case OpCode::Bitcast: case OpCode::PtrToInt:
      return d->operands[0]->type->is_pointer() || derived_from_pointer(d->operands[0], depth + 1);
    case OpCode::Add: case OpCode::Sub: case OpCode::And: case OpCode::Or: case OpCode::Cast: case OpCode::WarpUniform:
      for (const ir::Value* o : d->operands)
        if (derived_from_pointer(o, depth + 1)) return true;
      return false;
    default: return false;
  }
}

}  // namespace

bool forges_global_pointers(const ir::Block& body) {
  for (const auto& op : body.ops) {
    if (op->code == OpCode::TmaDescReplace && op->int_attr == int64_t(ir::TmaDescField::GlobalAddress) &&
        !derived_from_pointer(op->operands[1]))
      return true;
    if ((op->code == OpCode::Bitcast || op->code == OpCode::IntToPtr) && !op->results.empty() &&
        op->result()->type->is_pointer() && !op->operands[0]->type->is_pointer() &&
        op->result()->type->space != ir::AddrSpace::Smem && op->result()->type->space != ir::AddrSpace::Rmem &&
        !derived_from_pointer(op->operands[0]))
      return true;
    for (const auto& r : op->regions)
      if (forges_global_pointers(*r.block)) return true;
  }
  return false;
}

bool lower_sm90_tensormap(DeviceEmulator::Program& p, const ir::Op& op) {
  if (op.code == OpCode::TmaEncode) {  // a kernel's own descriptor (make_tiled_tma_atom in a kernel)
    Inst i(K::Sm90Tensormap);
    i.op = &op;
    i.code = op.code;
    i.imm = op.int_attr;  // rank
    i.type = op.result()->type->element;
    i.dst = p.reg(op.result());
    for (const ir::Value* v : op.operands) i.srcs.push_back(p.reg(v));
    p.emit(std::move(i));
    return true;
  }
  if (op.code != OpCode::TmaDescCopy && op.code != OpCode::TmaDescReplace && op.code != OpCode::TmaDescCpFenceRelease)
    return false;
  Inst i(K::Sm90Tensormap);
  i.op = &op;
  i.code = op.code;
  i.imm = op.int_attr;
  i.a = p.reg(op.operands[0]), i.b = p.reg(op.operands[1]);
  if (op.code == OpCode::TmaDescReplace) i.imm = op.int_attr * 8 + op.ints.at(0);  // field and ordinal
  // The slot's declared space: a shared slot must lie in the block's shared memory.
  i.space = (op.code == OpCode::TmaDescCopy ? op.operands[1] : op.operands[0])->type->space;
  p.emit(std::move(i));
  return true;
}

// ---- the warp interpreter's handler ----------------------------------------------------------

namespace {

// tma_encode in a kernel: each lane fills its descriptor (the fields the host's encode checks)
// in the block's store and gets its address.
void encode_in_kernel(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  const int rank = int(i.imm);
  const ir::Op& op = *i.op;
  for (uint32_t m = warp.mask; m; m &= m - 1) {
    const int l = __builtin_ctz(m);
    auto lane_value = [&](size_t k) { return warp.regs[size_t(i.srcs[k]) * kWarp + size_t(l)].i; };
    uint64_t dims[5], strides[5];
    uint32_t box[5];
    for (int k = 0; k < rank; ++k) {
      dims[k] = uint64_t(lane_value(size_t(1 + k)));
      strides[k] = uint64_t(lane_value(size_t(1 + rank + k)));
      box[k] = uint32_t(op.ints[size_t(1 + k)]);
    }
    std::unique_ptr<TmaDescriptor>& d = w.encoded_tma[reinterpret_cast<uintptr_t>(&i) * kWarp + uint64_t(l)];
    if (!d) d = std::make_unique<TmaDescriptor>();
    try {
      fill_tma_descriptor(*d, i.type, rank, uint64_t(lane_value(0)), dims, strides, box, int(op.ints[0]),
                          tma_encode_data_type(op));
      d->invalid = 0;
    } catch (const std::invalid_argument&) {
      // As tensormap.replace on the GPU, nothing checks the values here: NVIDIA's MoE GEMMs encode
      // one descriptor per expert, an empty expert's with extent 0, and never copy through it.
      d->invalid = 1;
    }
    warp.regs[size_t(i.dst) * kWarp + size_t(l)] = Scalar::of_int(int64_t(reinterpret_cast<uintptr_t>(d.get())));
  }
}

// The tensor-map ops need the warp's registers, shared memory, failure reports and the global bounds check.
Flow exec_sm90_tensormap(const Inst& i, const LaunchCtx& c, Worker& w, Warp& warp) {
  if (i.code == OpCode::TmaEncode) {
    encode_in_kernel(i, c, w, warp);
    return Flow::Next;
  }
  Sm90WarpContext ctx;
  ctx.regs = warp.regs;
  ctx.mask = warp.mask;
  ctx.table = &w.mbarriers;
  ctx.smem = w.smem;
  ctx.smem_size = w.smem_size;
  ctx.fail = [&](int lane, const std::string& what) { fail_at(c, w, warp, lane, i, what); };
  ctx.check_global = [&](int lane, uintptr_t addr, size_t bytes, bool store) {
    return check_access(c, w, warp, lane, i, addr, bytes, store);
  };
  if (c.cfg->device_memory)
    ctx.tensor_map_address = [&](int lane, uintptr_t addr) { return device_host_address(c, w, warp, lane, i, addr, 128); };
  execute_sm90_tensormap(i, ctx);
  return Flow::Next;
}

}  // namespace

void register_sm90_tensormap_handlers(HandlerTable& t) {
  t.add(K::Sm90Tensormap, exec_sm90_tensormap);
}

}  // namespace opencute::emulator

// Hopper bulk copies (TMA): cp.async.bulk.tensor loads (with multicast to the CTAs of a cluster
// mask; .cta_group::2 signalling the mbarrier of the destination's CTA pair), stores and reducing
// stores (cp.reduce.async.bulk.tensor) of a box of the tensor a CUtensorMap describes, the
// non-tensor cp.async.bulk copies and reductions, their mbarrier complete_tx, and the bulk groups
// (commit / wait: the copies complete when issued). The tensor map is the 128-byte image the
// launch laid out (or a kernel copied); it is read with the emulator's decoding
// (tma_descriptor_at). The box lands densely, dimension 0 innermost (16U4_ALIGN16B: each 8 bytes
// of packed 4-bit values followed by an 8-byte gap, written as zeros), with the map's swizzle
// applied to the shared-window address; elements outside the tensor read as zero and are not
// written.
#include "emulator/ptx/ptx_family_support.h"
#include "emulator/sm90_async.h"
#include "emulator/sm90_tensormap.h"

namespace opencute::emulator::ptx {

void mbarrier_complete_tx(ThreadCtx& t, Cluster& cl, uint64_t key, int64_t bytes);  // ptx_mbarrier.cpp

namespace {

enum Kind : int32_t { TensorLoad, TensorStore, TensorReduce, BulkLoad, BulkStore, BulkReduce, Nothing };
enum Flag : uint32_t { Multicast = 1, CtaPair = 2 };  // .multicast::cluster, .cta_group::2

// The element type a reducing tensor store combines: the map's CUtensorMapDataType.
PType element_type(ThreadCtx& t, const TmaDescriptor& d) {
  switch (d.data_type) {
    case 0: return PType::U8;
    case 1: return PType::U16;
    case 2: return PType::U32;
    case 3: return PType::S32;
    case 4: return PType::U64;
    case 5: return PType::S64;
    case 6: return PType::F16;
    case 7: return PType::F32;
    case 8: return PType::F64;
    case 9: return PType::BF16;
    default: t.fail("the tensor map does not say its element type; a reducing store cannot combine");
  }
}

// global[i] = op(global[i], shared[i]) for one element of `eb` bytes, atomically as the PTX ISA
// says: CTAs on other host threads may reduce into the same element (FA4's dQ accumulation).
void combine(ThreadCtx& t, uint8_t* g, const uint8_t* s, int32_t op, PType ty, int eb) {
  std::lock_guard<std::mutex> lock(atomic_mutex());
  uint64_t old = 0, v = 0;
  std::memcpy(&old, g, size_t(eb));
  std::memcpy(&v, s, size_t(eb));
  const uint64_t r = atom_apply(op, ty, old, v, 0);
  std::memcpy(g, &r, size_t(eb));
  (void)t;
}

uint64_t tma_swizzle(uint64_t off, int swizzle_bytes) {
  if (!swizzle_bytes) return off;
  const int bits = swizzle_bytes == 32 ? 1 : swizzle_bytes == 64 ? 2 : 3;
  const uint64_t mask = ((uint64_t(1) << bits) - 1) << 7;
  return off ^ ((off & mask) >> 3);
}

TmaDescriptor tensor_map(ThreadCtx& t, const Operand& map) {
  uint64_t host;
  if (map.kind == Operand::Imm && map.space == Space::Param) host = reinterpret_cast<uintptr_t>(t.host(uint64_t(map.imm), Space::Param, 128, false, 64));
  else host = reinterpret_cast<uintptr_t>(t.host(t.get(map), Space::Generic, 128, false, 64));
  TmaDescriptor d;
  if (!tma_descriptor_at(host, &d)) t.fail("the tensor map operand does not point at a TMA descriptor");
  if (d.invalid) t.fail("a TMA copy through a tensor map encoded from values TMA refuses (an extent, stride, box or "
                        "address out of its range)");
  return d;
}

// Calls f(shared offset of the element in the box, global address or 0 when out of bounds).
template <class F>
void for_each_box_element(ThreadCtx& t, const TmaDescriptor& map, const Operand& coords, F f) {
  if (coords.kind != Operand::Vec || int(coords.elems.size()) != map.rank)
    t.fail("the tensor map has rank " + std::to_string(map.rank) + ", the instruction gives " +
           std::to_string(coords.kind == Operand::Vec ? coords.elems.size() : 1) + " coordinates");
  int64_t c[5] = {0, 0, 0, 0, 0};
  for (int k = 0; k < map.rank; ++k) c[k] = sign_extend(t.get(coords.elems[size_t(k)]), 32);
  std::string error;
  const TmaDescriptor d = tma_byte_view(map, c, &error);  // packed 4-bit values as bytes
  if (!error.empty()) t.fail(error);
  uint32_t box[5] = {1, 1, 1, 1, 1};
  for (int k = 0; k < d.rank; ++k) box[k] = d.box[k];
  uint64_t n = 0;
  for (uint32_t i4 = 0; i4 < box[4]; ++i4)
    for (uint32_t i3 = 0; i3 < box[3]; ++i3)
      for (uint32_t i2 = 0; i2 < box[2]; ++i2)
        for (uint32_t i1 = 0; i1 < box[1]; ++i1)
          for (uint32_t i0 = 0; i0 < box[0]; ++i0, ++n) {
            const uint32_t idx[5] = {i0, i1, i2, i3, i4};
            bool inside = true;
            uint64_t g = d.global_address;
            for (int k = 0; k < d.rank; ++k) {
              const int64_t x = c[k] + int64_t(idx[k]);
              if (x < 0 || uint64_t(x) >= d.dims[k]) inside = false;
              g += uint64_t(x) * (k == 0 ? uint64_t(d.elem_bytes) : d.strides[k]);
            }
            f(tma_smem_offset(map.data_type, n * uint64_t(d.elem_bytes)), inside ? g : 0);
          }
}

// The bytes a box reads from global memory: its transaction bytes.
uint64_t box_bytes(const TmaDescriptor& d) {
  uint64_t b = uint64_t(d.elem_bytes);
  for (int k = 0; k < d.rank; ++k) b *= d.box[k];
  return tma_packed_4bit(d.data_type) ? b / 2 : b;  // two values to a byte
}

// The bytes a box takes in shared memory: 16U4_ALIGN16B spreads each 8 packed bytes over 16.
uint64_t box_footprint(const TmaDescriptor& d) {
  return d.data_type == kTmaUnpacked4Bit ? 2 * box_bytes(d) : box_bytes(d);
}

// The box's shared address needs 128-byte alignment whatever the swizzle: the swizzle is a function
// of the address bits (tma_swizzle), so a box 128 bytes past a 1024-byte boundary starts one row into
// the pattern, as the MMA reading it through a descriptor sees it (NVIDIA's Blackwell tutorial GEMM
// places its 128B-swizzled tiles at byte_alignment=128).
void check_swizzle_alignment(ThreadCtx& t, uint64_t smem_offset, int swizzle_bytes) {
  const uint64_t align = 128;
  (void)swizzle_bytes;
  if (smem_offset % align)
    t.fail("the shared-memory box at offset " + std::to_string(smem_offset) + " is not " + std::to_string(align) +
           "-byte aligned");
}

Step run_bulk(const Inst& i, ThreadCtx& t) {
  switch (i.i0) {
    case Nothing: return Step::Next;
    case TensorLoad: {
      // [dst], [map, {coords}], [mbar]{, ctaMask}{, policy}
      const TmaDescriptor d = tensor_map(t, i.ops[1].elems.at(0));
      const uint64_t dst = t.address(i.ops[0]), bar = t.address(i.ops[2]);
      uint64_t dst_off, bar_off;
      Cta& own = t.cluster_cta(dst, &dst_off);
      Cta& bar_cta = t.cluster_cta(bar, &bar_off);
      check_swizzle_alignment(t, dst_off, d.swizzle_bytes);
      // Each destination CTA's bytes complete an mbarrier at bar's offset: without multicast the
      // one bar names; with multicast, that of each destination, or with .cta_group::2 that of the
      // destination's pair CTA of bar's parity (bar's rank bit 0: the pair's even or odd CTA).
      std::vector<std::pair<Cta*, Cta*>> targets;  // (destination, its mbarrier's CTA)
      if (i.flags & Multicast) {
        const uint64_t mask = t.get(i.ops.at(3)) & 0xffff;
        for (Cta& c : t.cl.ctas) {
          if (!(mask >> c.rank & 1)) continue;
          size_t signalled = size_t(c.rank);
          if (i.flags & CtaPair) signalled = size_t((c.rank & ~1) | (bar_cta.rank & 1));
          if (signalled >= t.cl.ctas.size())
            t.fail("the mbarrier of CTA " + std::to_string(c.rank) + "'s pair is past the cluster's " +
                   std::to_string(t.cl.ctas.size()) + " CTAs");
          targets.emplace_back(&c, &t.cl.ctas[signalled]);
        }
      } else {
        if (!(i.flags & CtaPair) && &bar_cta != &own)
          t.fail("the mbarrier is not in the destination's CTA (that needs .cta_group::2 and the pair's peer)");
        if ((i.flags & CtaPair) && (bar_cta.rank & ~1) != (own.rank & ~1))
          t.fail("the mbarrier is in CTA " + std::to_string(bar_cta.rank) + ", outside the destination CTA " +
                 std::to_string(own.rank) + "'s pair");
        targets.emplace_back(&own, &bar_cta);
      }
      const uint64_t bytes = box_bytes(d), footprint = box_footprint(d);
      for (auto [c, b] : targets) {
        if (dst_off + footprint > c->smem_size) t.fail("the TMA box runs past the CTA's shared memory");
        for_each_box_element(t, d, i.ops[1].elems.at(1), [&](uint64_t o, uint64_t g) {
          uint8_t* p = c->smem + tma_swizzle(dst_off + o, d.swizzle_bytes);
          if (g) std::memcpy(p, t.host(g, Space::Global, uint64_t(d.elem_bytes), false, 1), size_t(d.elem_bytes));
          else std::memset(p, 0, size_t(d.elem_bytes));
        });
        if (d.data_type == kTmaUnpacked4Bit)  // the gap after each 8 bytes: zeros (a swizzle moves whole 16-byte chunks)
          for (uint64_t o = 8; o < footprint; o += 16) std::memset(c->smem + tma_swizzle(dst_off + o, d.swizzle_bytes), 0, 8);
        if (bar_off + 8 > b->smem_size) t.fail("the mbarrier lies outside the CTA's shared memory");
        mbarrier_complete_tx(t, t.cl, reinterpret_cast<uintptr_t>(b->smem + bar_off), int64_t(bytes));
      }
      return Step::Next;
    }
    case TensorStore:
    case TensorReduce: {
      // [map, {coords}], [src]
      const TmaDescriptor d = tensor_map(t, i.ops[0].elems.at(0));
      if (d.data_type == kTmaUnpacked4Bit)
        t.fail("a TMA store through a tensor map of 4-bit values unpacked in shared memory (16U4_ALIGN16B), which "
               "TMA only loads");
      const PType ty = i.i0 == TensorReduce ? element_type(t, d) : PType::None;
      const uint64_t src = t.address(i.ops[1]) & kSharedOffsetMask;  // shared::cta: this CTA's window
      check_swizzle_alignment(t, src, d.swizzle_bytes);
      if (src + box_bytes(d) > t.cta.smem_size) t.fail("the TMA box runs past the CTA's shared memory");
      for_each_box_element(t, d, i.ops[0].elems.at(1), [&](uint64_t o, uint64_t g) {
        if (!g) return;
        const uint8_t* p = t.cta.smem + tma_swizzle(src + o, d.swizzle_bytes);
        uint8_t* gp = t.host(g, Space::Global, uint64_t(d.elem_bytes), true, 1);
        if (i.i0 == TensorReduce) combine(t, gp, p, i.i1, ty, d.elem_bytes);
        else std::memcpy(gp, p, size_t(d.elem_bytes));
      });
      return Step::Next;
    }
    case BulkLoad: {
      // cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size, [mbar]
      const uint64_t size = t.get(i.ops[2]) & 0xffffffff;
      uint8_t* dst = t.host(t.address(i.ops[0]), Space::SharedCluster, size, true, 16);
      std::memcpy(dst, t.host(t.address(i.ops[1]), Space::Global, size, false, 16), size_t(size));
      uint8_t* bar = t.host(t.address(i.ops[3]), Space::SharedCluster, 8, true, 8);
      mbarrier_complete_tx(t, t.cl, reinterpret_cast<uintptr_t>(bar), int64_t(size));
      return Step::Next;
    }
    case BulkStore:
    case BulkReduce: {
      const uint64_t size = t.get(i.ops[2]) & 0xffffffff;
      const uint8_t* src = t.host(t.address(i.ops[1]), Space::Shared, size, false, 16);
      uint8_t* dst = t.host(t.address(i.ops[0]), Space::Global, size, true, 16);
      if (i.i0 == BulkStore) {
        std::memcpy(dst, src, size_t(size));
        return Step::Next;
      }
      const int eb = std::max(1, ptype_bits(i.type) / 8);
      for (uint64_t o = 0; o + uint64_t(eb) <= size; o += uint64_t(eb)) combine(t, dst + o, src + o, i.i1, i.type, eb);
      return Step::Next;
    }
  }
  return Step::Next;
}

void decode_bulk(Inst& i) {
  i.run = run_bulk;
  if (i.has_mod("commit_group") || i.has_mod("wait_group") || i.has_mod("prefetch")) {
    i.i0 = Nothing;
    return;
  }
  const bool reduce = i.has_mod("reduce");
  if (reduce) {
    i.i1 = atom_op_of(i);
    if (i.i1 < 0 || i.i1 == AExch || i.i1 == ACas) unsupported(i, "no reduction operation");
    i.type = last_type(i);
  }
  // The destination space is the first space modifier: .shared::cluster (load) or .global (store).
  Space dst = Space::Generic;
  for (const std::string& m : i.mods) {
    if (m == "global") { dst = Space::Global; break; }
    if (m.rfind("shared", 0) == 0) { dst = Space::SharedCluster; break; }
  }
  if (dst == Space::Generic) unsupported(i, "no state spaces");
  if (i.has_mod("tensor")) {
    if (i.has_mod("im2col") || i.has_mod("im2col_no_offs")) unsupported(i, "only the .tile mode");
    i.i0 = dst == Space::Global ? (reduce ? TensorReduce : TensorStore) : TensorLoad;
    i.flags = (i.has_mod("multicast::cluster") ? uint32_t(Multicast) : 0u) | (i.has_mod("cta_group::2") ? uint32_t(CtaPair) : 0u);
    const Operand& map = i.ops.at(i.i0 == TensorLoad ? 1 : 0);
    if (map.kind != Operand::Vec || map.elems.size() != 2) unsupported(i, "the [tensorMap, {coordinates}] operand");
  } else {
    i.i0 = dst == Space::Global ? (reduce ? BulkReduce : BulkStore) : BulkLoad;
    if (reduce && i.type == PType::None) unsupported(i, "no element type");
    if (i.has_mod("multicast::cluster")) unsupported(i, "multicast bulk copies");
  }
}

}  // namespace

void register_ptx_bulk_copy(PtxFamilyTable& t) { t.add("cp.async.bulk", decode_bulk); }

}  // namespace opencute::emulator::ptx

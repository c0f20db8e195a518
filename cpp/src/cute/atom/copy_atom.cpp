#include "cute/atom/copy_atom.h"

#include "layout/print.h"

namespace opencute::cute {

namespace L = opencute::layout;

int CopyAtom::value_bits() const { return value_type->is_bool() ? 8 : value_type->width; }

// CuTe's recast_layout<uint1_t, ValType>: bit layouts in elements of the atom's value type.
L::Layout CopyAtom::layout_src_tv() const { return L::recast_layout(value_bits(), 1, src_bits); }
L::Layout CopyAtom::layout_dst_tv() const { return L::recast_layout(value_bits(), 1, dst_bits); }
L::Layout CopyAtom::layout_ref_tv() const { return L::recast_layout(value_bits(), 1, ref_bits); }
int CopyAtom::num_src_values() const { return int(L::size(layout_src_tv(), {1}).value()); }
int CopyAtom::num_dst_values() const { return int(L::size(layout_dst_tv(), {1}).value()); }
int CopyAtom::num_ref_values() const { return int(L::size(layout_ref_tv(), {1}).value()); }
int CopyAtom::num_threads() const { return int(L::size(thr_id_layout).value()); }

CopyAtom make_copy_atom(const std::string& op, ir::Type value_type, int num_bits) {
  CopyAtom a;
  a.op_name = "universal";
  a.value_type = value_type;
  a.num_bits = num_bits > 0 ? num_bits : a.value_bits();
  a.src_bits = a.dst_bits = a.ref_bits = L::Layout(L::IntTuple{1, a.num_bits}, L::IntTuple{0, 1});
  if (a.num_bits % a.value_bits() != 0)
    throw L::LayoutError("make_copy_atom: num_bits_per_copy=" + std::to_string(num_bits) +
                         " is not a multiple of the element width " + std::to_string(a.value_bits()));
  if (a.num_bits > 128)
    throw L::LayoutError("make_copy_atom: num_bits_per_copy=" + std::to_string(num_bits) +
                         " exceeds the 128 bits one thread can move at once");
  return a;
}

std::string to_string(const CopyAtom& a) {
  return "Copy Atom\n  ThrID:         " + L::to_string(a.thr_id()) + "\n  TV Layout Src: " +
         L::to_string(a.layout_src_tv()) + "\n  TV Layout Dst: " + L::to_string(a.layout_dst_tv()) +
         "\n  Value type:    " + ir::to_string(a.value_type);
}

}  // namespace opencute::cute

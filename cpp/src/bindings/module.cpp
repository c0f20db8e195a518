// The nanobind module cutlass._core: the Python front end's only door into the C++ layers.
// Functions here unpack Python objects, call C++, and wrap the result; no semantics live here.
#include <optional>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <nanobind/stl/unique_ptr.h>

#include <chrono>
#include <climits>
#include <cstdio>

#include "dsl/arch_ops.h"
#include "dsl/named_barrier.h"
#include "dsl/dtype.h"
#include "dsl/num.h"
#include "dsl/printf_format.h"
#include "dsl/tracer.h"
#include "ir/printer.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"
#include "support/crash_report.h"
#include "support/log.h"
#include "runtime/compile_cache.h"
#include "bindings/layout_bindings.h"
#include "bindings/num_convert.h"
#include "bindings/python_errors.h"
#include "bindings/runtime_bindings.h"
#include "runtime/tensor_spec.h"
#include "bindings/tensor_argument.h"
#include "bindings/tensor_bindings.h"
#include "bindings/carry_bindings.h"
#include "bindings/tensor_ssa_bindings.h"
#include "support/cuda_paths.h"
#include "target/nvvm/lower_to_nvvm.h"
#include "target/nvvm/nvvm_compiler.h"

namespace nb = nanobind;
using namespace opencute;
using dsl::Num;
using bindings::to_num;

namespace {


struct TypeHandle {
  ir::Type t;
};
struct OpHandle {  // a region op under construction
  ir::Op* op;
};


std::vector<ir::Value*> materialize_all(nb::handle seq) {
  std::vector<ir::Value*> out;
  for (nb::handle h : seq) out.push_back(dsl::materialize(to_num(h)));
  return out;
}

nb::object static_value(const Num& n) {
  if (!n.is_static) return nb::none();
  if (n.type->is_float()) return nb::float_(n.s.f);
  if (n.type->is_bool()) return nb::bool_(n.s.i != 0);
  if (!n.type->is_signed && n.type->width == 64) return nb::steal(PyLong_FromUnsignedLongLong(uint64_t(n.s.i)));
  return nb::int_(n.s.i);
}

std::vector<Num> results_of(ir::Op* op) {
  std::vector<Num> out;
  for (auto& r : op->results) out.push_back(Num::of_value(r.get()));
  return out;
}

// ---- runtime argument plans -------------------------------------------------------------
// How each host-function parameter is read from the Python call arguments. Built once at
// compile time by the Python front end; executed in C++ on every call.
enum ArgKind { kScalar = 0, kTensorData = 1, kTensorShape = 2, kTensorStride = 3, kStream = 4, kPointer = 5 };

struct ArgSlot {
  int source;     // index into the call's positional arguments
  int kind;
  int mode;       // shape/stride mode for tensor entries
  ir::Type type;  // the host parameter's type
};

struct TensorCheck {  // the layout a tensor argument was compiled for
  int source;
  std::vector<int64_t> shape, stride;          // -1 where dynamic
  std::vector<int64_t> shape_div, stride_div;  // what dynamic entries were assumed divisible by
  bool int32_strides;                          // dynamic strides are Int32: the layout must fit
  std::string description;
};

struct PointerCheck {  // the pointer type a cute.Pointer argument was compiled for
  int source;
  std::string type_key;  // the runtime pointer's `_type_key`: element type, space, alignment
  int64_t align;
  std::string description;
};

struct Executor {
  std::shared_ptr<runtime::CompiledProgram> program;
  std::vector<ArgSlot> slots;
  std::vector<TensorCheck> checks;
  std::vector<PointerCheck> pointer_checks;
  int num_sources = 0;
  // Per positional argument: -1 for a single value, n for a list/tuple of n values (each a
  // source of its own). Empty when no argument is a sequence.
  std::vector<int> arg_lengths;
  std::vector<ir::Type> result_types;
  bool flush_python_stdout = false;
  bool release_gil = true;
  bool strict_regions = true;  // every pointer argument is a tensor of known extent
  std::string function_name;
  double trace_ms = 0;
};

int64_t as_int64(nb::handle h) {
  if (PyLong_Check(h.ptr())) return PyLong_AsLongLong(h.ptr());
  return nb::cast<int64_t>(nb::int_(h));
}

nb::object& user_error_class() {
  static nb::object* cls = new nb::object();  // cutlass._dsl.errors.from_core, set from Python
  return *cls;
}

nb::object& runtime_error_class() {
  static nb::object* cls = new nb::object();  // cutlass._dsl.errors.DSLRuntimeError, set from Python
  return *cls;
}

// Errors of a running program (the emulator's and the host interpreter's) as DSLRuntimeError;
// a failed assertion points at the user's line.
void raise_runtime_error(const char* what, const std::string& file, int line) {
  nb::object& cls = runtime_error_class();
  if (!cls.is_valid() || cls.is_none()) {
    PyErr_SetString(PyExc_RuntimeError, what);
    return;
  }
  nb::object exc = file.empty() ? cls(what) : cls(what, nb::arg("line") = line, nb::arg("filename") = file);
  PyErr_SetObject(cls.ptr(), exc.ptr());
}

void raise_user_error(const char* what, const char* code, PyObject* fallback) {
  bindings::raise_python_error(user_error_class(), what, code, fallback);  // the class depends on the code
}

// Turns the DSL's C++ errors into DSLUserCodeError; rethrows anything else for nanobind.
void translate_dsl_exception(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const dsl::UserError& e) {
    raise_user_error(e.what(), e.code.c_str(), PyExc_RuntimeError);
  } catch (const ir::ScopeError& e) {
    raise_user_error(e.what(), "SCOPE_VALUE_ESCAPES_REGION", PyExc_RuntimeError);
  } catch (const ir::TypeError& e) {
    raise_user_error(e.what(), "TYPE_MISMATCH", PyExc_TypeError);
  } catch (const emulator::AssertionFailure& e) {
    raise_runtime_error(e.what(), e.file, e.line);
  } catch (const emulator::ExecutionError& e) {
    raise_runtime_error(e.what(), "", 0);
  }
}

[[noreturn]] void layout_mismatch(const TensorCheck& c, bindings::TensorArgument& t, const std::string& why) {
  throw dsl::UserError("ARG_LAYOUT_MISMATCH", "argument #" + std::to_string(c.source) + " has layout " +
                                                  t.layout_string() + " but the function was compiled for " +
                                                  c.description + why);
}

// The static entries must match and the dynamic ones must honour what the code assumes of them.
void check_tensor_argument(const TensorCheck& c, nb::handle arg) {
  bindings::TensorArgument t(arg);
  const size_t rank = t.rank();
  if (rank != c.shape.size()) layout_mismatch(c, t, "");
  std::vector<int64_t> shape(rank), stride(rank);
  for (size_t i = 0; i < rank; ++i) {
    shape[i] = t.shape(i);
    stride[i] = t.stride(i);
    // A size-1 mode is never stepped along, so its stride does not matter.
    if ((c.shape[i] >= 0 && c.shape[i] != shape[i]) || (c.stride[i] >= 0 && c.stride[i] != stride[i] && shape[i] != 1))
      layout_mismatch(c, t, "");
  }
  for (size_t i = 0; i < rank; ++i) {
    if (c.shape[i] < 0 && c.shape_div[i] > 1 && shape[i] % c.shape_div[i] != 0)
      layout_mismatch(c, t, ": shape mode " + std::to_string(i) + " (" + std::to_string(shape[i]) +
                                ") is not divisible by " + std::to_string(c.shape_div[i]));
    if (c.stride[i] < 0 && c.stride_div[i] > 1 && stride[i] % c.stride_div[i] != 0)
      layout_mismatch(c, t, ": stride mode " + std::to_string(i) + " (" + std::to_string(stride[i]) +
                                ") is not divisible by " + std::to_string(c.stride_div[i]));
  }
  if (c.int32_strides && runtime::cosize(shape, stride) > INT32_MAX)
    throw dsl::UserError("ARG_LAYOUT_MISMATCH", "argument #" + std::to_string(c.source) + " (" + t.layout_string() +
                                                    "): " + runtime::kInt32OverflowMessage);
}

void check_pointer_argument(const PointerCheck& c, nb::handle arg) {
  nb::object key = nb::getattr(arg, "_type_key", nb::none());
  if (key.is_none() || nb::cast<std::string>(key) != c.type_key)
    throw dsl::UserError("ARG_POINTER_MISMATCH", "argument #" + std::to_string(c.source) + " is " +
                                                     nb::str(arg).c_str() + " but the function was compiled for " +
                                                     c.description);
  int64_t address = as_int64(arg.attr("_address"));
  if (c.align > 1 && address % c.align != 0)
    throw dsl::UserError("ARG_POINTER_MISMATCH", "argument #" + std::to_string(c.source) + ": address " +
                                                     std::to_string(address) + " is not aligned to " +
                                                     std::to_string(c.align) + " bytes as " + c.description +
                                                     " requires");
}

// The call's arguments with list/tuple arguments expanded into their items, as compiled.
std::vector<nb::handle> flat_arguments(const Executor& ex, nb::args args) {
  std::vector<nb::handle> flat;
  if (ex.arg_lengths.empty()) {
    for (nb::handle a : args) flat.push_back(a);
    return flat;
  }
  if (args.size() != ex.arg_lengths.size())
    throw dsl::UserError("ARG_BIND_FAILED", "compiled function takes " + std::to_string(ex.arg_lengths.size()) +
                                                " runtime arguments, got " + std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) {
    int n = ex.arg_lengths[i];
    nb::handle a = args[i];
    if (n < 0) {
      flat.push_back(a);
      continue;
    }
    if (!(PyList_Check(a.ptr()) || PyTuple_Check(a.ptr())) || int(nb::len(a)) != n)
      throw dsl::UserError("ARG_BIND_FAILED", "argument #" + std::to_string(i + 1) + " was compiled as a list of " +
                                                  std::to_string(n) + " items, got " +
                                                  std::string(nb::str(a.type()).c_str()));
    for (nb::handle e : a) flat.push_back(e);
  }
  return flat;
}

nb::object call_executor(Executor& ex, nb::args call_args) {
  std::vector<nb::handle> args = flat_arguments(ex, call_args);
  if (int(args.size()) != ex.num_sources)
    throw dsl::UserError("ARG_BIND_FAILED", "compiled function takes " + std::to_string(ex.num_sources) +
                                                " runtime arguments, got " + std::to_string(args.size()));
  for (auto& c : ex.checks) check_tensor_argument(c, args[size_t(c.source)]);
  for (auto& c : ex.pointer_checks) check_pointer_argument(c, args[size_t(c.source)]);
  std::vector<ir::Scalar> vals(ex.slots.size());
  // Kernels on the CPU emulator check each access against the tensors' extents.
  const bool emulated = ex.program->runs_on_emulator();
  std::vector<emulator::MemoryRegion> regions;
  // Slots of one tensor are adjacent, so one reader serves them all.
  std::optional<bindings::TensorArgument> tensor;
  int tensor_source = -1;
  for (size_t i = 0; i < ex.slots.size(); ++i) {
    const ArgSlot& s = ex.slots[i];
    nb::handle a = args[size_t(s.source)];
    switch (s.kind) {
      case kScalar: {
        Num n = to_num(a);
        if (!n.is_static) throw dsl::UserError("ARG_UNSUPPORTED_TYPE", "a dynamic value cannot be passed from Python");
        vals[i] = ir::eval_cast(n.type, s.type, n.s);
        break;
      }
      case kTensorData:
      case kTensorShape:
      case kTensorStride: {
        if (tensor_source != s.source) {
          tensor.emplace(a);
          tensor_source = s.source;
        }
        if (s.kind == kTensorData) {
          vals[i] = ir::Scalar::of_int(tensor->data());
          if (emulated) {
            int64_t lo = 0, hi = 0, elem = s.type->element ? s.type->element->byte_size() : 1;
            bool empty = false;
            for (size_t d = 0; d < tensor->rank(); ++d) {
              int64_t n = tensor->shape(d), st = tensor->stride(d);
              if (n <= 0) empty = true;
              else (st > 0 ? hi : lo) += (n - 1) * st;
            }
            uintptr_t base = uintptr_t(tensor->data());
            emulator::MemoryRegion r;
            r.begin = base + uintptr_t(lo * elem);
            r.end = empty ? r.begin : base + uintptr_t((hi + 1) * elem);
            r.name = "tensor argument #" + std::to_string(s.source);
            regions.push_back(std::move(r));
          }
        } else {
          int64_t v = s.kind == kTensorShape ? tensor->shape(size_t(s.mode)) : tensor->stride(size_t(s.mode));
          if (s.type->width == 32 && (v < INT32_MIN || v > INT32_MAX))
            throw dsl::UserError("ARG_LAYOUT_MISMATCH",
                                 "argument #" + std::to_string(s.source) + ": " +
                                     (s.kind == kTensorShape ? "shape" : "stride") + " mode " + std::to_string(s.mode) +
                                     " is " + std::to_string(v) + ", which does not fit the Int32 it was compiled as");
          vals[i] = ir::Scalar::of_int(ir::wrap_int(s.type, v));
        }
        break;
      }
      case kStream: {
        int64_t h = 0;
        if (a.is_none()) h = 0;
        else if (PyLong_Check(a.ptr())) h = PyLong_AsLongLong(a.ptr());
        else if (nb::hasattr(a, "cuda_stream")) h = as_int64(a.attr("cuda_stream"));
        else h = as_int64(nb::int_(a));  // cuda.bindings CUstream: int() is the handle (getPtr() is not)
        vals[i] = ir::Scalar::of_int(h);
        break;
      }
      case kPointer: {
        if (nb::hasattr(a, "_address")) vals[i] = ir::Scalar::of_int(as_int64(a.attr("_address")));
        else vals[i] = ir::Scalar::of_int(as_int64(a));
        break;
      }
    }
  }
  tensor.reset();
  if (ex.flush_python_stdout) {
    // Host printf writes to the C stdout; flush Python's buffer first so output stays in order.
    nb::module_::import_("sys").attr("stdout").attr("flush")();
  }
  std::vector<ir::Scalar> results;
  if (ex.release_gil) {
    nb::gil_scoped_release release;
    results = emulated ? ex.program->run(vals, regions, ex.strict_regions) : ex.program->run(vals);
  } else {
    results = emulated ? ex.program->run(vals, regions, ex.strict_regions) : ex.program->run(vals);
  }
  if (ex.result_types.empty()) return nb::none();
  nb::list out;
  for (size_t i = 0; i < ex.result_types.size(); ++i) {
    Num n;
    n.type = ex.result_types[i];
    n.s = results[i];
    out.append(static_value(n));
  }
  if (out.size() == 1) return out[0];
  return nb::tuple(out);
}

// The type's call slot: CPython calls it with the argument tuple directly, skipping the method
// lookup and nanobind's overload dispatch that a bound __call__ would cost on every call.
PyObject* compiled_function_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  try {
    if (kwargs && PyDict_Size(kwargs) != 0)
      throw dsl::UserError("ARG_BIND_FAILED", "a compiled function takes positional arguments only");
    Executor* ex = nb::inst_ptr<Executor>(self);
    return call_executor(*ex, nb::borrow<nb::args>(args)).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (...) {
    try {
      translate_dsl_exception(std::current_exception());
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception");
    }
  }
  return nullptr;
}

PyType_Slot compiled_function_slots[] = {{Py_tp_call, reinterpret_cast<void*>(compiled_function_call)},
                                         {0, nullptr}};

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "OpenCuTe C++ core";
  opencute::support::install_crash_report_if_requested();

  m.def("_set_user_error_class", [](nb::object cls) { user_error_class() = cls; });
  m.def("_set_runtime_error_class", [](nb::object cls) { runtime_error_class() = cls; });
  nb::register_exception_translator([](const std::exception_ptr& p, void*) { translate_dsl_exception(p); });

  // ---- numerics ----
  nb::class_<TypeHandle>(m, "IRType")
      .def("__str__", [](const TypeHandle& t) { return ir::to_string(t.t); })
      .def("__eq__", [](const TypeHandle& a, const TypeHandle& b) { return a.t == b.t; })
      .def("__hash__", [](const TypeHandle& t) { return std::hash<const void*>()(t.t); });
  m.def("dtype_type", [](const std::string& name) { return TypeHandle{dsl::dtype_from_name(name)}; });
  m.def("pointer_type", [](const std::string& dtype, int space, int align) {
    return TypeHandle{ir::pointer_type(dsl::dtype_from_name(dtype), ir::AddrSpace(space), align)};
  });
  m.def("dtype_names", &dsl::dtype_names);
  m.def("promote", [](const std::string& a, const std::string& b) {
    return dsl::dtype_name(dsl::promote(dsl::dtype_from_name(a), dsl::dtype_from_name(b)));
  });
  m.def("dtype_info", [](const std::string& name) {
    ir::Type t = dsl::dtype_from_name(name);
    return nb::make_tuple(t->width, t->is_float(), t->is_signed, t->byte_size());
  });

  nb::class_<Num>(m, "Num")
      .def_prop_ro("dtype", [](const Num& n) { return dsl::dtype_name(n.type); })
      .def_prop_ro("is_static", [](const Num& n) { return n.is_static; })
      .def_prop_ro("value", &static_value)
      .def_prop_ro("ir_type", [](const Num& n) { return TypeHandle{n.type}; })
      .def("__repr__", &dsl::num_repr);

  m.def("num", [](const std::string& dtype, nb::handle v) {
    ir::Type t = dsl::dtype_from_name(dtype);
    if (PyFloat_Check(v.ptr())) {
      double d = PyFloat_AsDouble(v.ptr());
      if (t->is_int() && !t->is_bool()) {
        if (std::isnan(d)) throw nb::value_error("cannot convert float NaN to integer");
        if (std::isinf(d)) throw std::overflow_error("cannot convert float infinity to integer");
      }
      if (t->is_bool()) return Num::of_int(t, d != 0.0);
      return Num::of_float(t, d);
    }
    if (PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) {
      if (t->is_bool()) return Num::of_int(t, PyObject_IsTrue(v.ptr()) == 1);
      int overflow = 0;
      long long i = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      if (overflow) {
        // C-style wrap of big Python ints: keep the low 64 bits.
        i = (long long)PyLong_AsUnsignedLongLongMask(v.ptr());
      }
      return Num::of_int(t, i);
    }
    return dsl::convert(to_num(v), t);
  });
  m.def("as_num", &to_num);
  m.def("binary", [](int op, nb::handle a, nb::handle b) {
    return dsl::binary(dsl::BinOp(op), bindings::to_operand(a), bindings::to_operand(b));
  });
  m.def("compare", [](int p, nb::handle a, nb::handle b) {
    return dsl::compare(ir::CmpPredicate(p), bindings::to_operand(a), bindings::to_operand(b));
  });
  m.def("negate", [](nb::handle a) { return dsl::negate(to_num(a)); });
  m.def("invert", [](nb::handle a) { return dsl::invert(to_num(a)); });
  m.def("absolute", [](nb::handle a) { return dsl::absolute(to_num(a)); });
  m.def("to_boolean", [](nb::handle a) { return dsl::to_boolean(to_num(a)); });
  m.def("convert", [](nb::handle a, const std::string& dtype) { return dsl::convert(to_num(a), dsl::dtype_from_name(dtype)); });
  m.def("bitcast", [](nb::handle a, const std::string& dtype) { return dsl::bitcast(to_num(a), dsl::dtype_from_name(dtype)); });
  m.def("select", [](nb::handle c, nb::handle a, nb::handle b) { return dsl::select(to_num(c), to_num(a), to_num(b)); });
  m.def("math", [](const std::string& fn, nb::list args) {
    std::vector<Num> operands;
    for (nb::handle h : args) operands.push_back(bindings::to_operand(h));
    return dsl::math(fn, operands);
  });


  // ---- tracing ----
  nb::class_<OpHandle>(m, "Op");
  nb::class_<dsl::Tracer>(m, "Tracer")
      .def(nb::init<>())
      .def("activate", &dsl::Tracer::activate)
      .def("deactivate", &dsl::Tracer::deactivate)
      .def("in_kernel", &dsl::Tracer::in_kernel)
      .def("begin_function", [](dsl::Tracer& t, const std::string& name, bool kernel) {
        t.begin_function(name, kernel ? ir::FunctionKind::Kernel : ir::FunctionKind::Host);
      })
      .def("set_reqntid", [](dsl::Tracer& t, int x, int y, int z) {
        auto* f = t.current_function();
        f->reqntid[0] = x; f->reqntid[1] = y; f->reqntid[2] = z;
      })
      .def("add_argument", [](dsl::Tracer& t, const TypeHandle& ty) { return Num::of_value(t.add_argument(ty.t)); })
      .def("end_function", [](dsl::Tracer& t, nb::list results) { t.end_function(materialize_all(results)); })
      .def("unique_kernel_name", &dsl::Tracer::unique_kernel_name)
      .def("module_text", [](dsl::Tracer& t) { return ir::print_module(t.module()); })
      .def("set_location", [](dsl::Tracer& t, const std::string& file, int line) { t.builder().set_location(file, line); })
      .def("if_begin", [](dsl::Tracer& t, nb::handle cond) {
        Num c = dsl::to_boolean(to_num(cond));
        return OpHandle{t.builder().create_if(dsl::materialize(c))};
      })
      .def("for_begin", [](dsl::Tracer& t, nb::handle lb, nb::handle ub, nb::handle step, nb::list inits, int unroll) {
        Num l = to_num(lb), u = to_num(ub), s = to_num(step);
        ir::Type it = dsl::promote(dsl::promote(l.type, u.type), s.type);
        if (!it->is_int() || it->is_bool()) throw dsl::UserError("TYPE_LOOP_PARAM_NOT_INT", "range bounds must be integers");
        ir::Op* op = t.builder().create_for(dsl::materialize(dsl::convert(l, it)), dsl::materialize(dsl::convert(u, it)),
                                            dsl::materialize(dsl::convert(s, it)), materialize_all(inits), unroll);
        std::vector<Num> iters;
        ir::Block* body = op->region_block(0);
        for (size_t i = 1; i < body->args.size(); ++i) iters.push_back(Num::of_value(body->args[i].get()));
        return nb::make_tuple(OpHandle{op}, Num::of_value(body->args[0].get()), iters);
      })
      .def("while_begin", [](dsl::Tracer& t, nb::list inits) {
        ir::Op* op = t.builder().create_while(materialize_all(inits));
        std::vector<Num> before, after;
        for (auto& a : op->region_block(0)->args) before.push_back(Num::of_value(a.get()));
        for (auto& a : op->region_block(1)->args) after.push_back(Num::of_value(a.get()));
        return nb::make_tuple(OpHandle{op}, before, after);
      })
      .def("enter_region", [](dsl::Tracer& t, OpHandle h, int i) { t.enter_region(h.op, i); })
      .def("exit_to_parent", [](dsl::Tracer& t, OpHandle h) { t.exit_to_parent(h.op); })
      // Drops a region op just traced (a loop traced again from a weaker carried structure).
      .def("erase_op", [](dsl::Tracer& t, OpHandle h) {
        auto& ops = h.op->parent->ops;
        for (auto it = ops.begin(); it != ops.end(); ++it)
          if (it->get() == h.op) { ops.erase(it); break; }
      })
      .def("yield_", [](dsl::Tracer& t, nb::list vals) { t.builder().yield(materialize_all(vals)); })
      .def("condition", [](dsl::Tracer& t, nb::handle cond, nb::list vals) {
        t.builder().condition(dsl::materialize(dsl::to_boolean(to_num(cond))), materialize_all(vals));
      })
      .def("set_results", [](dsl::Tracer& t, OpHandle h, std::vector<TypeHandle> types) {
        ir::Op* op = h.op;
        std::vector<ir::Type> ts;
        for (auto& th : types) ts.push_back(th.t);
        t.builder().set_results(op, ts);
        return results_of(op);
      })
      .def("printf", [](dsl::Tracer& t, const std::string& fmt, nb::list args) {
        std::vector<ir::Value*> vals = materialize_all(args);
        std::vector<ir::Type> types;
        for (auto* v : vals) types.push_back(v->type);
        t.builder().printf(dsl::to_c_format(fmt, types), vals);
      })
      .def("special", [](dsl::Tracer& t, const std::string& what, int dim) {
        if (!t.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", what + " is only available inside a @cute.kernel");
        ir::OpCode c = what == "thread_idx" ? ir::OpCode::ThreadIdx : what == "block_idx" ? ir::OpCode::BlockIdx
                     : what == "block_dim"  ? ir::OpCode::BlockDim  : what == "grid_dim"  ? ir::OpCode::GridDim
                     : what == "lane_idx"   ? ir::OpCode::LaneIdx   : ir::OpCode::WarpIdx;
        return Num::of_value(t.builder().special(c, dim));
      })
      .def("barrier", [](dsl::Tracer& t) {
        if (!t.in_kernel()) throw dsl::UserError("ARCH_OUTSIDE_KERNEL", "sync_threads is only available inside a @cute.kernel");
        t.builder().barrier();
      })
      .def("set_assertions_enabled", &dsl::Tracer::set_assertions_enabled)
      .def("assertions_enabled", &dsl::Tracer::assertions_enabled)
      .def("assertion", [](dsl::Tracer&, nb::handle cond, const std::string& message, const std::string& file, int line) {
        dsl::assertion(to_num(cond), message, file, line);
      })
      .def("shuffle", [](dsl::Tracer&, const std::string& kind, nb::handle value, nb::handle offset, nb::handle mask,
                         nb::handle clamp) {
        return dsl::shuffle(ir::shuffle_kind_from_name(kind), to_num(value), to_num(offset), to_num(mask), to_num(clamp));
      })
      .def("named_barrier", [](dsl::Tracer&, nb::handle id, nb::handle count, bool arrive_only) {
        dsl::named_barrier(to_num(id), to_num(count),
                           arrive_only ? ir::NamedBarrierKind::Arrive : ir::NamedBarrierKind::Sync);
      })
      .def("vote", [](dsl::Tracer&, const std::string& kind, nb::handle pred, nb::handle mask) {
        return dsl::vote(ir::vote_kind_from_name(kind), to_num(pred), to_num(mask));
      })
      // `compare`: empty, or the one compare value of a cas.
      .def("atomic", [](dsl::Tracer&, const std::string& kind, nb::handle ptr, nb::handle value, nb::list compare,
                        const std::string& sem, const std::string& scope) {
        std::optional<Num> cmp;
        if (nb::len(compare) > 0) cmp = to_num(compare[0]);
        return dsl::atomic(ir::atomic_kind_from_name(kind), to_num(ptr), to_num(value), cmp ? &*cmp : nullptr, sem,
                           scope);
      })
      .def("smem_alloc", [](dsl::Tracer&, const std::string& dtype, int64_t count, int align) {
        return dsl::smem_alloc(dsl::dtype_from_name(dtype), count, align);
      })
      .def("dyn_smem", [](dsl::Tracer&, const std::string& dtype, int align) {
        return dsl::dyn_smem(dsl::dtype_from_name(dtype), align);
      })
      .def("dyn_smem_size", [](dsl::Tracer&) { return dsl::dyn_smem_size(); })
      .def("launch", [](dsl::Tracer& t, const std::string& kernel, nb::list grid, nb::list block, nb::handle smem,
                        nb::handle stream, nb::list cluster, nb::list args) {
        auto dims = [](nb::list l) {
          std::vector<ir::Value*> out;
          for (nb::handle h : l) out.push_back(dsl::materialize(dsl::convert(to_num(h), ir::i32())));
          return out;
        };
        std::vector<ir::Value*> cl;
        if (nb::len(cluster) > 0) cl = dims(cluster);
        ir::Value* sm = dsl::materialize(dsl::convert(to_num(smem), ir::i32()));
        ir::Value* st = dsl::materialize(dsl::convert(to_num(stream), ir::i64()));
        t.builder().launch(kernel, dims(grid), dims(block), sm, st, cl, materialize_all(args));
      });

  // ---- compilation and execution ----
  // What cute.compile returns. Bound in C++ so that a call goes straight from Python's call
  // slot to call_executor, with no Python frame in between.
  nb::class_<Executor>(m, "JitCompiledFunction",
                       "A compiled @cute.jit function; call it with the runtime arguments only (Constexpr "
                       "parameters and `self` are omitted).",
                       nb::type_slots(compiled_function_slots))
      .def_prop_ro("__mlir__", [](const Executor& e) { return e.program->ir_text(); })
      .def_prop_ro("ir_module", [](const Executor& e) { return e.program->ir_text(); })
      .def_prop_ro("nvvm_ir", [](const Executor& e) { return e.program->nvvm_text(); })
      .def_prop_ro("__ptx__", [](const Executor& e) -> nb::object {
        if (e.program->ptx().empty()) return nb::none();
        return nb::str(e.program->ptx().c_str());
      })
      .def_prop_ro("__cubin__", [](const Executor& e) -> nb::object {
        const auto& c = e.program->cubin();
        if (c.empty()) return nb::none();
        return nb::bytes(c.data(), c.size());
      })
      .def_prop_ro("arch", [](const Executor& e) { return e.program->arch(); })
      .def_prop_ro("hash", [](const Executor& e) { return e.program->hash(); })
      .def_prop_ro("has_kernels", [](const Executor& e) { return e.program->has_kernels(); })
      .def_prop_ro("target", [](const Executor& e) { return e.program->runs_on_emulator() ? "cpu" : "gpu"; })
      .def_rw("function_name", &Executor::function_name)
      .def_rw("trace_ms", &Executor::trace_ms)
      .def_prop_ro("timings_ms", [](const Executor& e) {
        const auto& t = e.program->timings();
        nb::dict d;
        d["trace"] = e.trace_ms;
        d["verify"] = t.verify_ms;
        d["lower"] = t.lower_ms;
        d["nvvm"] = t.nvvm_ms;
        d["link"] = t.link_ms;
        d["cache"] = t.cache_ms;
        d["cache_hit"] = t.cache_hit;
        return d;
      })
      .def("__repr__", [](const Executor& e) {
        return "<JitCompiledFunction " + e.function_name + " for " + e.program->arch() + ">";
      });

  // `options`: arch, opt_level, generate_line_info, ptxas_options, need_cubin, use_disk_cache,
  // version, function_name, keep_ir, keep_ptx, keep_cubin, dump_dir, target (cpu|gpu|auto);
  // missing keys keep their defaults.
  // checks: (source, static shape, static stride, shape divisibility, stride divisibility,
  // int32 strides, description) per tensor; pointer_checks: (source, type key, align, description).
  m.def("compile_traced", [](dsl::Tracer& tracer, nb::dict options, nb::list slots, nb::list checks,
                             nb::list pointer_checks, int num_sources, std::vector<TypeHandle> result_types) {
    runtime::CompileOptions opts;
    auto get = [&](const char* key, auto& field) {
      if (options.contains(key)) field = nb::cast<std::remove_reference_t<decltype(field)>>(options[key]);
    };
    get("arch", opts.arch);
    get("opt_level", opts.opt_level);
    get("generate_line_info", opts.generate_line_info);
    get("ptxas_options", opts.ptxas_options);
    get("need_cubin", opts.need_cubin);
    get("use_disk_cache", opts.use_disk_cache);
    get("version", opts.version);
    get("function_name", opts.function_name);
    get("keep_ir", opts.keep_ir);
    get("keep_ptx", opts.keep_ptx);
    get("keep_cubin", opts.keep_cubin);
    get("dump_dir", opts.dump_dir);
    std::string target;
    get("target", target);
    if (target == "cpu") opts.target = runtime::CompileOptions::Target::Cpu;
    else if (target == "gpu") opts.target = runtime::CompileOptions::Target::Gpu;
    else if (!target.empty() && target != "auto")
      throw dsl::UserError("CONFIG_MALFORMED_COMPILE_OPTIONS", "unknown compile target '" + target + "' (cpu or gpu)");
    auto ex = std::make_unique<Executor>();
    {
      auto module = tracer.take_module();
      nb::gil_scoped_release release;
      ex->program = std::make_shared<runtime::CompiledProgram>(std::move(module), opts);
    }
    const ir::Function& host = ex->program->host_function();
    for (size_t i = 0; i < nb::len(slots); ++i) {
      nb::tuple s = nb::cast<nb::tuple>(slots[i]);
      ex->slots.push_back(ArgSlot{nb::cast<int>(s[0]), nb::cast<int>(s[1]), nb::cast<int>(s[2]), host.args()[i]->type});
      if (ex->slots.back().kind == kPointer) ex->strict_regions = false;
    }
    for (nb::handle h : checks) {
      nb::tuple c = nb::cast<nb::tuple>(h);
      ex->checks.push_back(TensorCheck{nb::cast<int>(c[0]), nb::cast<std::vector<int64_t>>(c[1]),
                                       nb::cast<std::vector<int64_t>>(c[2]), nb::cast<std::vector<int64_t>>(c[3]),
                                       nb::cast<std::vector<int64_t>>(c[4]), nb::cast<bool>(c[5]),
                                       nb::cast<std::string>(c[6])});
    }
    for (nb::handle h : pointer_checks) {
      nb::tuple c = nb::cast<nb::tuple>(h);
      ex->pointer_checks.push_back(PointerCheck{nb::cast<int>(c[0]), nb::cast<std::string>(c[1]),
                                                nb::cast<int64_t>(c[2]), nb::cast<std::string>(c[3])});
    }
    ex->num_sources = num_sources;
    get("arg_lengths", ex->arg_lengths);
    for (auto& t : result_types) ex->result_types.push_back(t.t);
    // Emulated kernels print on the C stdout too: flush Python's buffer first.
    ex->flush_python_stdout = ex->program->host_has_printf() ||
                              (ex->program->has_device_printf() && ex->program->runs_on_emulator());
    ex->release_gil = ex->program->run_may_take_long() || ex->program->runs_on_emulator();
    return ex;
  });

  // ---- CUDA ----
  m.def("cuda_available", []() { return runtime::CudaDriver::get().available(); });
  m.def("initialize_cuda_context", [](int device) { runtime::CudaDriver::get().initialize_context(device); });
  m.def("device_arch", [](int device) { return runtime::CudaDriver::get().device_arch(device); });
  m.def("device_attribute", [](int attr, int device) { return runtime::CudaDriver::get().device_attribute(attr, device); });
  m.def("add_cuda_search_root", &support::add_cuda_search_root);
  m.def("compile_cache_dir", []() { return runtime::DiskCache::instance().dir(); });
  m.def("log", [](int level, const std::string& message) { support::log(support::LogLevel(level), message); });
  m.def("log_enabled", [](int level) { return support::log_enabled(support::LogLevel(level)); });
  m.def("reload_log_configuration", &support::reload_log_configuration);
  m.def("context_synchronize", []() { runtime::CudaDriver::get().context_synchronize(); });

  bindings::bind_layouts(m);
  bindings::bind_num_convert(m);
  bindings::bind_tensors(m);
  bindings::bind_runtime(m);
  bindings::bind_tensor_ssa(m);
  bindings::bind_carry(m);
}

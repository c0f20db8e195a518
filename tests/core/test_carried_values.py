"""Any DSL value across dynamic control flow: tensors, layouts, TensorSSA, pointers, tuples and
lists of them and user classes with __extract_mlir_values__ / __new_from_mlir_values__ are
loop-carried and assignable in a dynamic `if`; a structure mismatch raises at the user's line.
Kernels run on the CPU emulator and are checked against numpy."""
import inspect

import functools

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32
from cutlass._dsl.carry import extract_mlir_values, new_from_mlir_values


def line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    for i, l in enumerate(src):
        if text in l:
            return start + i
    raise AssertionError(text)


def run(host, *arrays):
    cute.compile(host, *arrays, options="--target cpu")(*arrays)


# ---- a tensor view re-pointed in a dynamic if inside a dynamic loop (tensorop_gemm's tCsA_p) ----

@cute.kernel
def repoint_kernel(src: cute.Tensor, out: cute.Tensor, n: Int32):
    t, _, _ = cute.arch.thread_idx()
    stages = cute.size(src, mode=[1])
    stage = 0
    view = src[None, stage]
    acc = Float32(0)
    for k in range(n):
        if k % 3 == 2:
            stage = stage + 1
            if stage == stages:
                stage = 0
            view = src[None, stage]
        acc = acc + view[t] * Float32(k + 1)
    out[t] = acc


@cute.jit
def repoint_host(src: cute.Tensor, out: cute.Tensor, n: Int32):
    repoint_kernel(src, out, n).launch(grid=(1, 1, 1), block=(src.shape[0], 1, 1))


def test_tensor_view_repointed_in_dynamic_if_in_loop():
    src = np.arange(8 * 3, dtype=np.float32).reshape(8, 3) * 0.5 + 1
    out = np.zeros(8, dtype=np.float32)
    n = 10
    cute.compile(repoint_host, src, out, n, options="--target cpu")(src, out, n)
    want, stage = np.zeros(8, np.float32), 0
    for k in range(n):
        if k % 3 == 2:
            stage = (stage + 1) % 3
        want += src[:, stage] * (k + 1)
    np.testing.assert_allclose(out, want, rtol=1e-6)


# ---- a loop-carried TensorSSA accumulator --------------------------------------------------------

@cute.kernel
def ssa_acc_kernel(src: cute.Tensor, out: cute.Tensor):
    frag = cute.make_rmem_tensor((4,), Float32)
    acc = cute.full((4,), 0.0, Float32)
    for k in range(src.shape[1]):
        for i in cutlass.range_constexpr(4):
            frag[i] = src[i, k]
        acc = acc + frag.load() * 2.0
    frag.store(acc)
    for i in cutlass.range_constexpr(4):
        out[i] = frag[i]


@cute.jit
def ssa_acc_host(src: cute.Tensor, out: cute.Tensor):
    ssa_acc_kernel(src, out).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_loop_carried_tensor_ssa_accumulator():
    src = np.random.default_rng(0).uniform(-1, 1, (4, 7)).astype(np.float32)
    out = np.zeros(4, dtype=np.float32)
    run(ssa_acc_host, src, out)
    np.testing.assert_allclose(out, (src * 2).sum(axis=1), rtol=1e-5)


# ---- tuples and lists of tensors swapped in a loop (double buffering) -------------------------------

@cute.kernel
def swap_kernel(src: cute.Tensor, out: cute.Tensor, n: Int32):
    t, _, _ = cute.arch.thread_idx()
    pair = (src[None, 0], src[None, 1])
    state = [pair, Int32(0)]
    acc = Float32(0)
    for k in range(n):
        cur, nxt = state[0]
        acc = acc + cur[t] * Float32(state[1] + 1)
        state = [(nxt, cur), state[1] + 1]
    out[t] = acc


@cute.jit
def swap_host(src: cute.Tensor, out: cute.Tensor, n: Int32):
    swap_kernel(src, out, n).launch(grid=(1, 1, 1), block=(src.shape[0], 1, 1))


def test_tuple_of_tensors_swapped_in_loop():
    src = np.random.default_rng(1).uniform(-1, 1, (6, 2)).astype(np.float32)
    out = np.zeros(6, dtype=np.float32)
    n = 5
    cute.compile(swap_host, src, out, n, options="--target cpu")(src, out, n)
    want = sum(src[:, k % 2] * (k + 1) for k in range(n))
    np.testing.assert_allclose(out, want, rtol=1e-6)


# ---- a user class with the protocol, advanced in a loop ---------------------------------------------

class RingState:
    """A pipeline-state-like class: static stage count, dynamic index and phase."""

    def __init__(self, stages, index, phase):
        self.stages, self.index, self.phase = stages, index, phase

    @cute.jit
    def advanced(self):
        index, phase = self.index + 1, self.phase
        if index == self.stages:
            index, phase = Int32(0), phase ^ 1
        return type(self)(self.stages, index, phase)

    def __extract_mlir_values__(self):
        return extract_mlir_values(self.index) + extract_mlir_values(self.phase)

    def __new_from_mlir_values__(self, values):
        return RingState(self.stages, new_from_mlir_values(self.index, values[:1]),
                         new_from_mlir_values(self.phase, values[1:]))


@cute.kernel
def ring_kernel(out: cute.Tensor, n: Int32):
    state = RingState(3, Int32(0), Int32(0))
    for k in range(n):
        out[k, 0] = state.index
        out[k, 1] = state.phase
        state = state.advanced()


@cute.jit
def ring_host(out: cute.Tensor, n: Int32):
    ring_kernel(out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_user_class_with_protocol_advanced_in_loop():
    n = 8
    out = np.full((n, 2), -1, dtype=np.int32)
    cute.compile(ring_host, out, n, options="--target cpu")(out, n)
    np.testing.assert_array_equal(out[:, 0], [k % 3 for k in range(n)])
    np.testing.assert_array_equal(out[:, 1], [(k // 3) % 2 for k in range(n)])


# ---- a layout with dynamic leaves chosen in a dynamic if --------------------------------------------

@cute.kernel
def layout_kernel(out: cute.Tensor, m: Int32, flip: Int32):
    lay = cute.make_layout((m, 4), stride=(1, m))
    if flip == 1:
        lay = cute.make_layout((m, 4), stride=(1, m * 2))
    for i in range(m):
        for j in cutlass.range_constexpr(4):
            out[i, j] = lay((i, j))


@cute.jit
def layout_host(out: cute.Tensor, m: Int32, flip: Int32):
    layout_kernel(out, m, flip).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("flip", [0, 1])
def test_layout_with_dynamic_leaves_chosen_in_dynamic_if(flip):
    m = 5
    out = np.zeros((m, 4), dtype=np.int32)
    cute.compile(layout_host, out, m, flip, options="--target cpu")(out, m, flip)
    i, j = np.meshgrid(np.arange(m), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(out, i + j * (2 * m if flip else m))


# ---- mismatches raise at the user's line ------------------------------------------------------------

def _expect(fn, args, code, text, region=None):
    """The error is raised at the line holding `text`; `region`: the text of the dynamic
    if/for/while line the message names as context."""
    with pytest.raises(cutlass.DSLRuntimeError) as ei:
        fn(*args)
    err = ei.value
    assert err.code == code, str(err)
    assert err.filename == __file__, str(err)
    assert err.line == line_of(fn.__wrapped__, text), str(err)
    if region is not None:
        assert f"in the dynamic control flow at line {line_of(fn.__wrapped__, region)}" in str(err), str(err)
    return str(err)


def test_mismatch_different_static_layout_in_if():
    @cute.jit
    def f(c: Int32):
        lay = cute.make_layout((4, 8))
        if c == 1:
            lay = cute.make_layout((4, 8), stride=(8, 1))

    msg = _expect(f, (1,), "TYPE_UNSTABLE_JOIN", "lay = cute.make_layout((4, 8), stride=(8, 1))", "if c == 1:")
    assert "(4,8):(1,4)" in msg and "(4,8):(8,1)" in msg


def test_mismatch_tensor_dtype_in_loop():
    @cute.jit
    def f(a: cute.Tensor, b: cute.Tensor, n: Int32):
        t = a
        for i in range(n):
            t = b

    a = np.zeros(4, np.float32)
    b = np.zeros(4, np.int32)
    msg = _expect(f, (a, b, 2), "TYPE_UNSTABLE_JOIN", "t = b", "for i in range(n):")
    assert "f32" in msg and "i32" in msg


def test_mismatch_tensor_and_number_in_if():
    @cute.jit
    def f(a: cute.Tensor, c: Int32):
        if c == 1:
            v = a
        else:
            v = Int32(3)
        cute.printf("{}", v)

    _expect(f, (np.zeros(4, np.float32), 1), "SCOPE_READ_NEVER_SET", "cute.printf")


def test_mismatch_tensor_replaced_by_number_in_if():
    @cute.jit
    def f(a: cute.Tensor, c: Int32):
        v = a
        if c == 1:
            v = Int32(3)

    _expect(f, (np.zeros(4, np.float32), 1), "TYPE_UNSTABLE_JOIN", "v = Int32(3)", "if c == 1:")


def test_mismatch_tensor_ssa_shape_in_loop():
    @cute.jit
    def f(n: Int32):
        v = cute.full((2,), 1.0, Float32)
        for i in range(n):
            v = cute.full((3,), 1.0, Float32)

    _expect(f, (2,), "TYPE_UNSTABLE_JOIN", "v = cute.full((3,), 1.0, Float32)", "for i in range(n):")


def test_mismatch_python_object_reassigned_in_loop():
    @cute.jit
    def f(n: Int32):
        s = "a"
        for i in range(n):
            s = "b"

    _expect(f, (2,), "PHASE_MUTATE_PYTHON", 's = "b"', "for i in range(n):")


def test_mismatch_protocol_value_types_in_while():
    @cute.jit
    def f(n: Int32):
        st = RingState(3, Int32(0), Int32(0))
        while n > 0:
            st = RingState(3, Float32(0), Int32(0))
            n = n - 1

    _expect(f, (2,), "TYPE_UNSTABLE_JOIN", "st = RingState(3, Float32(0), Int32(0))", "while n > 0:")


def test_same_static_object_needs_no_ir():
    sizes = []

    @cute.jit
    def f(c: Int32):
        lay = cute.make_layout((4, 8))
        if c == 1:
            lay = cute.make_layout((4, 8))
        sizes.append(cute.size(lay))
        cute.printf("{}", cute.size(lay))

    compiled = cute.compile(f, 1)
    # Static on both paths with the same value: after the join it is still the static layout (its
    # size a Python int), and the `if` carries no value out (an `if` with results reads `%n = if`).
    assert sizes == [32] and type(sizes[0]) is int
    lines = compiled.__mlir__.splitlines()
    assert [l.strip() for l in lines if l.strip().startswith("if ")] == ["if %2 {"]
    assert not [l for l in lines if " = if " in l]
    assert "%3 = constant 32 : i32" in compiled.__mlir__ and 'printf "%d\\n" (%3)' in compiled.__mlir__
    compiled(1)


# ---- a pointer whose alignment the loop weakens (the loop is traced again) -----------------------

@cute.kernel
def walk_kernel(a: cute.Tensor, out: cute.Tensor, n: Int32):
    p = a.iterator
    for k in range(n):
        out[k] = cute.make_tensor(p, cute.make_layout(1))[0]
        p = p + 3


@cute.jit
def walk_host(a: cute.Tensor, out: cute.Tensor, n: Int32):
    walk_kernel(a, out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_pointer_alignment_weakened_in_loop():
    from cutlass.cute.runtime import from_dlpack
    a = np.arange(32, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    ta = from_dlpack(a, assumed_align=16)
    compiled = cute.compile(walk_host, ta, out, 8, options="--target cpu")
    compiled(ta, out, 8)
    np.testing.assert_array_equal(out, a[0:24:3])
    # entered with align<16>, the loop carries what holds on every iteration: align<4>
    assert "iter(%" in compiled.__mlir__ and "align<16>" in compiled.__mlir__
    loop = [l for l in compiled.__mlir__.splitlines() if " = for " in l]
    assert len(loop) == 1 and loop[0].endswith("(!ptr<f32, generic, align<4>>) {"), loop


# ---- a protocol object changed in place (NVIDIA's PipelineState.advance()) -----------------------

class PipelineState:
    def __init__(self, stages, index, phase):
        self.stages, self._index, self._phase = stages, index, phase

    @property
    def index(self):
        return self._index

    @property
    def phase(self):
        return self._phase

    @cute.jit
    def advance(self):
        self._index = self._index + 1
        if self._index == self.stages:
            self._index = Int32(0)
            self._phase = self._phase ^ 1

    def __extract_mlir_values__(self):
        return [self._index.ir_value(), self._phase.ir_value()]

    def __new_from_mlir_values__(self, values):
        return PipelineState(self.stages, Int32(values[0]), Int32(values[1]))


@cute.kernel
def in_place_kernel(out: cute.Tensor, n: Int32):
    state = PipelineState(3, Int32(0), Int32(0))
    for k in range(n):
        out[k, 0] = state.index
        out[k, 1] = state.phase
        if k % 2 == 0:
            state.advance()
        state.advance()


@cute.jit
def in_place_host(out: cute.Tensor, n: Int32):
    in_place_kernel(out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_protocol_object_changed_in_place_in_loop_and_if():
    n = 7
    out = np.full((n, 2), -1, dtype=np.int32)
    cute.compile(in_place_host, out, n, options="--target cpu")(out, n)
    want, count = [], 0
    for k in range(n):
        want.append((count % 3, (count // 3) % 2))
        count += 2 if k % 2 == 0 else 1
    np.testing.assert_array_equal(out, np.array(want, dtype=np.int32))


@cute.jit
def advanced(state: PipelineState):
    state.advance()
    return state


@cute.kernel
def advance_and_rebind_kernel(out: cute.Tensor, n: Int32):
    state = PipelineState(3, Int32(0), Int32(0))
    alias = state
    if n > 0:
        state = advanced(state)
    out[n, 0] = alias.index  # the same object: it kept its identity through the `if`
    for k in range(n):
        # Changed in place and rebound in one branch (NVIDIA's Blackwell fmha.py:
        # `v_handle, producer = self.update_and_advance(producer, ...)`): the other branch and
        # the code after the `if` must see the state the taken branch left.
        if k % 3 != 1:
            state = advanced(state)
        out[k, 0] = state.index
        out[k, 1] = state.phase


@cute.jit
def advance_and_rebind_host(out: cute.Tensor, n: Int32):
    advance_and_rebind_kernel(out, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


def test_protocol_object_changed_in_place_then_rebound_in_one_branch():
    n = 8
    out = np.full((n + 1, 2), -1, dtype=np.int32)
    cute.compile(advance_and_rebind_host, out, n, options="--target cpu")(out, n)
    count, want = 1, []
    for k in range(n):
        count += k % 3 != 1
        want.append((count % 3, (count // 3) % 2))
    np.testing.assert_array_equal(out[:n], np.array(want, dtype=np.int32))
    assert out[n, 0] == 1


class Cursor:
    """A tile cursor advanced in place (as fmha_helpers' FmhaStaticTileScheduler)."""

    def __init__(self, idx):
        self.idx = idx

    def advance(self):
        self.idx = self.idx + 2

    def __extract_mlir_values__(self):
        return [self.idx.ir_value()]

    def __new_from_mlir_values__(self, values):
        return Cursor(Int32(values[0]))


@cute.jit
def walk(cursor: Cursor, out: cute.Tensor, row: Int32):
    n = Int32(0)
    while cursor.idx < 7:
        out[row, n] = cursor.idx
        cursor.advance()
        n += 1


@cute.kernel
def roles_kernel(out: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    role = functools.partial(walk, Cursor(Int32(tidx)))
    # Each role's loop advances the one cursor the partial holds; the `if`s do not name it. After
    # a role's `if` the cursor has its state from before it again (its advanced state is defined
    # inside the `if`), so the next role starts from the thread's first index too.
    if tidx == 0:
        role(out, 0)
    if tidx == 1:
        role(out, 1)
    else:
        role(out, 2 + tidx)


@cute.jit
def roles_host(out: cute.Tensor):
    roles_kernel(out).launch(grid=(1, 1, 1), block=(3, 1, 1))


def test_object_changed_in_place_through_a_partial_in_each_branch():
    out = np.full((5, 4), -1, dtype=np.int32)
    cute.compile(roles_host, out, options="--target cpu")(out)
    # thread 0: rows 0 and (the else path) 2; thread 1: row 1; thread 2: row 4.
    np.testing.assert_array_equal(out, [[0, 2, 4, 6], [1, 3, 5, -1], [0, 2, 4, 6], [-1] * 4, [2, 4, 6, -1]])


# ---- a protocol object advanced in place inside a helper that one path of an `if` assigns back
#      (FlashAttention-4's block-sparse loads: `state = load_block_list(..., state)` in both arms,
#      the helper advancing the state inside its own dynamic `if`) ------------------------------------

@cute.jit
def advance_times(state: PipelineState, count: Int32):
    if count > 0:
        for _ in range(count):
            state.advance()
    return state


@cute.kernel
def assigned_and_advanced_kernel(out: cute.Tensor, flip: Int32, a: Int32, b: Int32):
    state = PipelineState(3, Int32(0), Int32(0))
    if flip == 0:
        state = advance_times(state, a)
    else:
        out[0, 0] = state.index  # the state as it was before the `if`, not after the other arm
        out[0, 1] = state.phase
        state = advance_times(state, b)
    out[1, 0] = state.index
    out[1, 1] = state.phase


@cute.jit
def assigned_and_advanced_host(out: cute.Tensor, flip: Int32, a: Int32, b: Int32):
    assigned_and_advanced_kernel(out, flip, a, b).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("flip", [0, 1])
def test_protocol_object_advanced_in_helper_and_assigned_in_both_arms(flip):
    a, b = 4, 5
    out = np.full((2, 2), -1, dtype=np.int32)
    cute.compile(assigned_and_advanced_host, out, flip, a, b, options="--target cpu")(out, flip, a, b)
    steps = a if flip == 0 else b
    want_before = (-1, -1) if flip == 0 else (0, 0)
    np.testing.assert_array_equal(out, np.array([want_before, (steps % 3, (steps // 3) % 2)], dtype=np.int32))


# ---- a Python flag of an object changed in place survives a dynamic region inside its own method
#      (FlashAttention-4's SingleTileVarlenScheduler: advance_to_next_work() sets
#      `_is_first_block = False`, and get_current_work() walks the batches in a dynamic `while`
#      that calls its methods; its __new_from_mlir_values__ constructs a scheduler whose flag is
#      True again, and a kernel's tile loop never ended) ---------------------------------------------

class FirstTileScheduler:
    def __init__(self, num_tiles):
        self.num_tiles = num_tiles
        self._is_first = True  # plain Python state: the constructor resets it

    def _tiles_after(self, start):
        return self.num_tiles - start

    @cute.jit
    def current(self, tidx: Int32):
        tile = Int32(0)
        while self._tiles_after(tile) > 2:  # a dynamic loop that names `self` (a method call)
            tile += 1
        valid = False
        if tidx < self.num_tiles:  # a dynamic `if` that names `self` too
            valid = self._is_first and self._tiles_after(tile) > 0
        return tile, valid

    def advance(self):
        self._is_first = False

    def __extract_mlir_values__(self):
        return [self.num_tiles.ir_value()]

    def __new_from_mlir_values__(self, values):
        return FirstTileScheduler(Int32(values[0]))


@cute.kernel
def first_tile_kernel(out: cute.Tensor, num_tiles: Int32):
    tidx, _, _ = cute.arch.thread_idx()
    scheduler = FirstTileScheduler(num_tiles)
    tile, valid = scheduler.current(tidx)
    iterations = Int32(0)
    while valid and iterations < 4:  # the bound only keeps a failing test from hanging
        iterations += 1
        out[tidx, 0] = tile
        scheduler.advance()
        tile, valid = scheduler.current(tidx)
    out[tidx, 1] = iterations


@cute.jit
def first_tile_host(out: cute.Tensor, num_tiles: Int32):
    first_tile_kernel(out, num_tiles).launch(grid=(1, 1, 1), block=(2, 1, 1))


def test_python_flag_of_object_changed_in_place_survives_its_own_dynamic_loop():
    out = np.full((2, 2), -1, dtype=np.int32)
    cute.compile(first_tile_host, out, 5, options="--target cpu")(out, 5)
    np.testing.assert_array_equal(out, [[3, 1], [3, 1]])  # one tile each: the first, tile 5 - 2


# ---- the shape of tensorop_gemm's main loop: nested dynamic loops, a re-pointed view ----------------

@cute.kernel
def gemm_like_kernel(stages_src: cute.Tensor, out: cute.Tensor, k_tile_count: Int32):
    t, _, _ = cute.arch.thread_idx()
    num_stages = cute.size(stages_src, mode=[2])
    num_k_block = cute.size(stages_src, mode=[1])
    smem_pipe_read = 0
    smem_pipe_write = num_stages - 1
    view = stages_src[None, None, smem_pipe_read]
    acc = Float32(0)
    for k_tile in range(k_tile_count):
        for k_block in cutlass.range(num_k_block, unroll_full=True):
            if k_block == num_k_block - 1:
                view = stages_src[None, None, smem_pipe_read]
            k_block_next = (k_block + 1) % num_k_block
            acc = acc + view[t, k_block_next] * Float32(k_tile + 1)
            if k_block == 0:
                if k_tile + num_stages - 1 < k_tile_count:
                    pass
                else:
                    acc = acc + Float32(0.5)
                smem_pipe_write = smem_pipe_read
                smem_pipe_read = smem_pipe_read + 1
                if smem_pipe_read == num_stages:
                    smem_pipe_read = 0
    out[t] = acc + Float32(smem_pipe_write * 1000)


@cute.jit
def gemm_like_host(stages_src: cute.Tensor, out: cute.Tensor, k_tile_count: Int32):
    gemm_like_kernel(stages_src, out, k_tile_count).launch(grid=(1, 1, 1), block=(stages_src.shape[0], 1, 1))


def test_tensorop_gemm_main_loop_shape():
    src = np.random.default_rng(5).uniform(-1, 1, (8, 2, 3)).astype(np.float32)
    out = np.zeros(8, np.float32)
    k_tiles = 5
    cute.compile(gemm_like_host, src, out, k_tiles, options="--target cpu")(src, out, k_tiles)
    stages, nkb = src.shape[2], src.shape[1]
    read, write, view, acc = 0, stages - 1, src[:, :, 0], np.zeros(8, np.float64)
    for k_tile in range(k_tiles):
        for k_block in range(nkb):
            if k_block == nkb - 1:
                view = src[:, :, read]
            acc += view[:, (k_block + 1) % nkb].astype(np.float64) * (k_tile + 1)
            if k_block == 0:
                if not (k_tile + stages - 1 < k_tiles):
                    acc += 0.5
                write, read = read, (read + 1) % stages
    np.testing.assert_allclose(out, (acc + write * 1000).astype(np.float32), rtol=1e-6)


# ---- a composed (swizzled) layout with dynamic leaves chosen in a dynamic if -----------------------

@cute.kernel
def composed_kernel(out: cute.Tensor, m: Int32, flip: Int32):
    sw = cute.make_swizzle(1, 1, 2)
    lay = cute.make_composed_layout(sw, 0, cute.make_layout((m, 4), stride=(1, m)))
    if flip == 1:
        lay = cute.make_composed_layout(sw, 0, cute.make_layout((m, 4), stride=(1, m * 2)))
    for i in range(m):
        for j in cutlass.range_constexpr(4):
            out[i, j] = lay((i, j))


@cute.jit
def composed_host(out: cute.Tensor, m: Int32, flip: Int32):
    composed_kernel(out, m, flip).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("flip", [0, 1])
def test_composed_layout_chosen_in_dynamic_if(flip):
    m = 4
    out = np.zeros((m, 4), dtype=np.int32)
    cute.compile(composed_host, out, m, flip, options="--target cpu")(out, m, flip)
    i, j = np.meshgrid(np.arange(m), np.arange(4), indexing="ij")
    offset = i + j * (2 * m if flip else m)
    swizzled = offset ^ ((offset & 0b1000) >> 2)  # CuTe Swizzle<1,1,2>: bit 3 xor'd into bit 1
    np.testing.assert_array_equal(out, swizzled)


def test_mismatch_composed_layout_swizzle():
    @cute.jit
    def f(c: Int32):
        lay = cute.make_composed_layout(cute.make_swizzle(1, 1, 2), 0, cute.make_layout(8))
        if c == 1:
            lay = cute.make_composed_layout(cute.make_swizzle(2, 1, 2), 0, cute.make_layout(8))

    _expect(f, (1,), "TYPE_UNSTABLE_JOIN", "lay = cute.make_composed_layout(cute.make_swizzle(2", "if c == 1:")


@cute.kernel
def weaken_kernel(a: cute.Tensor, out: cute.Tensor, c: Int32, n: Int32):
    p = a.iterator
    if c == 1:
        p = p + 1  # align<4> on this path, align<16> on the other: joined to align<4>
    out[0] = cute.make_tensor(p, cute.make_layout(1))[0]
    q = a.iterator
    k = Int32(0)
    while k < n:
        q = q + 2
        k = k + 1
    out[1] = cute.make_tensor(q, cute.make_layout(1))[0]


@cute.jit
def weaken_host(a: cute.Tensor, out: cute.Tensor, c: Int32, n: Int32):
    weaken_kernel(a, out, c, n).launch(grid=(1, 1, 1), block=(1, 1, 1))


@pytest.mark.parametrize("c", [0, 1])
def test_pointer_alignment_joined_in_if_and_while(c):
    from cutlass.cute.runtime import from_dlpack
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(2, dtype=np.float32)
    ta = from_dlpack(a, assumed_align=16)
    compiled = cute.compile(weaken_host, ta, out, c, 3, options="--target cpu")
    compiled(ta, out, c, 3)
    np.testing.assert_array_equal(out, [a[c], a[6]])
    loops = [l for l in compiled.__mlir__.splitlines() if " = while " in l or " = if " in l]
    assert len(loops) == 2 and all("align<8>" in l or "align<4>" in l for l in loops), loops


def test_cutlass_dsl_protocol_helpers():
    from cutlass.cutlass_dsl import extract_mlir_values as extract, new_from_mlir_values as rebuild
    seen = {}

    @cute.jit
    def f(n: Int32):
        value = (n, 3, [n + 1])
        vals = extract(value)
        seen["count"] = len(vals)
        again = rebuild(value, vals)
        seen["static"] = again[1]
        cute.printf("{} {}", again[0], again[2][0])

    f(4)
    assert seen == {"count": 2, "static": 3}  # Python ints are static: no IR values

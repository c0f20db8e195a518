"""`cutlass.utils.gemm.sm100`: the Blackwell GEMM epilogue's building blocks. Library code over DSL
operations. The epilogue loops themselves (epilogue, epilogue_tma_store, epilogue_tmem_copy_and_partition)
need tensor-memory copies that are not available yet: reading one is an AttributeError that says so."""
from ... import cute


def transform_partitioned_tensor_layout(tensor, *, loc=None, ip=None):
    """An MMA-partitioned tensor ((MMA M, MMA N), rest M, rest N, ...) seen as the tile it covers,
    ((MMA M, rest M), (MMA N, rest N), ...): mode 0 the tile's M, mode 1 its N (so that it can be
    divided by an epilogue tile), the remaining modes unchanged."""
    layout = tensor.layout
    if cute.rank(layout) < 3 or cute.rank(cute.get(layout, mode=[0])) != 2:
        raise ValueError(f"transform_partitioned_tensor_layout: expected ((MMA M, MMA N), rest M, rest N, ...), got "
                         f"{layout}")
    mma = cute.get(layout, mode=[0])
    mma_m, mma_n = cute.get(mma, mode=[0]), cute.get(mma, mode=[1])
    rest_m, rest_n = cute.get(layout, mode=[1]), cute.get(layout, mode=[2])
    modes = [cute.make_layout((mma_m.shape, rest_m.shape), stride=(mma_m.stride, rest_m.stride)),
             cute.make_layout((mma_n.shape, rest_n.shape), stride=(mma_n.stride, rest_n.stride))]
    modes += [cute.get(layout, mode=[i]) for i in range(3, cute.rank(layout))]
    shape = tuple(m.shape for m in modes)
    stride = tuple(m.stride for m in modes)
    return cute.make_tensor(tensor.iterator, cute.make_layout(shape, stride=stride))


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"cutlass.utils.gemm.sm100.{name}: the Blackwell epilogue loops need tensor-memory copies "
                         "(tcgen05.ld), which are not available in OpenCuTe yet")

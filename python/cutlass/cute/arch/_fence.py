"""Memory fences: proxy fences between generic and async proxies, acquire-release fences by scope."""
import enum as _enum

from ... import _core


class ProxyKind(_enum.Enum):
    """The proxy of `fence_proxy` (the NVVM dialect's ProxyKind; `async` is `async_` in Python)."""
    alias = "alias"
    async_ = "async"
    async_global = "async.global"
    async_shared = "async.shared"
    tensormap_generic = "tensormap.generic"
    generic = "generic"


class SharedSpace(_enum.Enum):
    """The shared-memory window of an `async.shared` proxy fence (the NVVM dialect's SharedSpace)."""
    shared_cta = "cta"
    shared_cluster = "cluster"


_FENCE_PROXY_KINDS = {
    "alias": "proxy_alias",
    "async": "proxy_async",
    "async.global": "proxy_async_global",
    "async.shared": None,  # by space
}


def _kind_text(v):
    if v is None:
        return None
    if isinstance(v, str):
        return v
    name = getattr(v, "value", None)
    if isinstance(name, str):
        return name
    return getattr(v, "name", str(v)).replace("_", ".").lower()


def fence_proxy(kind, *, space=None, use_intrinsic=None, loc=None, ip=None):
    """A proxy fence: `kind` in "alias", "async", "async.global", "async.shared" (with
    space="cta" or "cluster"); orders generic-proxy accesses (ordinary loads and stores) with the
    async proxy (TMA, wgmma operands) before a barrier hands the data over."""
    k = _kind_text(kind)
    sp = _kind_text(space)
    if sp is not None:
        sp = sp.split("::")[-1].replace("shared.", "")
    if k == "async.shared" or k == "async.shared.cta" or k == "async.shared.cluster":
        if k != "async.shared":
            sp = k.rsplit(".", 1)[1]
        if sp not in (None, "cta", "cluster"):
            raise ValueError(f"fence_proxy: space must be 'cta' or 'cluster', got {space!r}")
        _core.sm90.fence("proxy_async_shared_cluster" if sp == "cluster" else "proxy_async_shared_cta")
        return
    if k not in _FENCE_PROXY_KINDS:
        raise ValueError(f"fence_proxy: unknown proxy kind {kind!r} (expected one of "
                         f"{', '.join(repr(x) for x in _FENCE_PROXY_KINDS)})")
    _core.sm90.fence(_FENCE_PROXY_KINDS[k])


def fence_view_async_shared(*, loc=None, ip=None):
    """fence.proxy.async.shared::cta: shared memory written by threads becomes visible to the
    async proxy (TMA stores, wgmma)."""
    _core.sm90.fence("proxy_async_shared_cta")


def fence_acq_rel_cta(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_cta")


def fence_acq_rel_cluster(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_cluster")


def fence_acq_rel_gpu(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_gpu")


def fence_acq_rel_sys(*, loc=None, ip=None):
    _core.sm90.fence("acq_rel_sys")

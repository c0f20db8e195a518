"""Programmatic dependent launch (sm_90+) and cluster launch control (sm_100+)."""
from ... import _core
from ..._dsl import context
from ..._dsl.numeric import Int32, wrap
from ._common import _pointer_value


# ---- programmatic dependent launch (sm_90+) ---------------------------------------------------
# With launch(use_pdl=True) the next kernel on the stream may start before this one finished:
# griddepcontrol_wait blocks until the grids this one depends on completed and their memory is
# visible; griddepcontrol_launch_dependents lets the dependent grid start now.

def griddepcontrol_wait(*, loc=None, ip=None):
    context.tracer().griddepcontrol(True)


def griddepcontrol_launch_dependents(*, loc=None, ip=None):
    context.tracer().griddepcontrol(False)


# ---- cluster launch control (sm_100+) ------------------------------------------------------------
# A persistent kernel launched over its whole problem asks, from one thread, to cancel the launch
# of a cluster that has not started yet (issue_clc_query) and does that cluster's work itself. The
# 16-byte answer lands in shared memory and completes 16 transaction bytes on the mbarrier, in
# every CTA of the cluster; clc_response reads it once the barrier's phase completed.

def issue_clc_query(mbar_ptr, clc_response_ptr, *, loc=None, ip=None):
    """clusterlaunchcontrol.try_cancel (multicast to the cluster): the response (16 bytes, 16-byte
    aligned shared memory) and 16 transaction bytes on `mbar_ptr`'s barrier, in every CTA of the cluster."""
    _core.clc.try_cancel(_pointer_value(clc_response_ptr), _pointer_value(mbar_ptr), True)


def clc_response(result_addr, *, loc=None, ip=None):
    """(x, y, z, valid), Int32 each: the ctaid of the first CTA of the cluster the query canceled, and
    1 when it canceled one (0: no cluster was left to take, x / y / z are then 0)."""
    x, y, z, canceled = _core.clc.query_cancel(_pointer_value(result_addr))
    return wrap(x), wrap(y), wrap(z), Int32(wrap(canceled))

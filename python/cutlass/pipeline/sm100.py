"""Blackwell pipelines by name: libraries import them at module level next to the Hopper ones
(quack's pipeline module subclasses PipelineTmaUmma). Their barriers are completed by tcgen05 MMA
commits (sm_100), which OpenCuTe does not implement yet: making one raises NotImplementedError."""
import dataclasses
from typing import Optional

from .sm90 import PipelineAsync


def _blackwell_only(name):
    raise NotImplementedError(f"cutlass.pipeline.{name} needs Blackwell's tcgen05 UMMA (sm_100), which OpenCuTe "
                              "does not implement yet")


@dataclasses.dataclass(frozen=True)
class PipelineTmaUmma(PipelineAsync):
    """TMA producer, tcgen05 UMMA consumer (Blackwell)."""

    is_leader_cta: Optional[bool] = None
    cta_group: Optional[object] = None

    def __post_init__(self):
        _blackwell_only(type(self).__name__)

    @classmethod
    def create(cls, *args, **kwargs):
        _blackwell_only(cls.__name__)

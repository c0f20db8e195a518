"""cutlass.pipeline: synchronisation objects of NVIDIA's kernels (named barriers, the mbarrier
pipelines of Hopper and Blackwell and their building blocks)."""
from .helpers import (Agent, CooperativeGroup, MbarrierArray, PipelineOp, PipelineState, PipelineUserType, agent_sync, arrive,
                      arrive_and_wait, arrive_unaligned, make_pipeline_state, pipeline_init_arrive, pipeline_init_wait,
                      sync, wait, wait_unaligned)
from .named_barrier import NamedBarrier
from .sm90 import (PipelineAsync, PipelineConsumer, PipelineOrder, PipelineProducer, PipelineTmaAsync,
                   PipelineTmaStore)
from .sm100 import (PipelineAsyncUmma, PipelineClcFetchAsync, PipelineCpAsync, PipelineTmaMultiConsumersAsync,
                    PipelineTmaUmma, PipelineUmmaAsync)

__all__ = ["Agent", "CooperativeGroup", "MbarrierArray", "NamedBarrier", "PipelineOp", "PipelineAsync", "PipelineConsumer",
           "PipelineOrder", "PipelineProducer", "PipelineAsyncUmma", "PipelineClcFetchAsync", "PipelineCpAsync",
           "PipelineTmaMultiConsumersAsync", "PipelineUmmaAsync", "PipelineState", "PipelineTmaAsync", "PipelineTmaStore", "PipelineTmaUmma",
           "PipelineUserType", "agent_sync", "arrive", "arrive_and_wait", "arrive_unaligned", "make_pipeline_state",
           "pipeline_init_arrive", "pipeline_init_wait", "sync", "wait", "wait_unaligned"]

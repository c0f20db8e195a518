"""`cutlass.base_dsl`: the DSL core's runtime helpers that examples import."""

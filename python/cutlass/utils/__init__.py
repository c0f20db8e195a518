"""`cutlass.utils`: helpers written with DSL operations (layouts, smem allocation, printing)."""
from .print_latex import print_latex, print_latex_tv  # noqa: F401

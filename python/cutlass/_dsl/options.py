"""Compile options: the string form (`options="--opt-level 2 --keep-ptx"`) parsed strictly,
and the option classes of `cute.compile[...]`."""
import os
import shlex

from .. import _core
from .errors import DSLUserCodeError

# The front end's version: part of every compile-cache key.
VERSION = "0.1.0"


class CompileOption:
    name = ""
    default = None

    def __init__(self, value=None):
        self.value = self.default if value is None else value


class BoolOption(CompileOption):
    default = True


class OptLevel(CompileOption):
    name = "opt_level"
    default = 3

    def __init__(self, value=3):
        if not isinstance(value, int) or not 0 <= value <= 3:
            raise DSLUserCodeError(f"optimisation level must be an int in [0, 3], got {value!r}",
                                   code="CONFIG_INVALID_OPT_LEVEL")
        super().__init__(value)


class EnableAssertions(BoolOption):
    name = "enable_assertions"


class GenerateLineInfo(BoolOption):
    name = "generate_line_info"


class KeepCUBIN(BoolOption):
    name = "keep_cubin"


class KeepPTX(BoolOption):
    name = "keep_ptx"


class KeepSASS(BoolOption):
    name = "keep_sass"


class EnableTVMFFI(BoolOption):
    name = "enable_tvm_ffi"


class PtxasOptions(CompileOption):
    name = "ptxas_options"
    default = ""


class GPUArch(CompileOption):
    name = "gpu_arch"
    default = ""


class LinkLibraries(CompileOption):
    name = "link_libraries"
    default = ""


class DumpDir(CompileOption):
    name = "dump_dir"
    default = ""


TARGETS = ("gpu", "cpu", "ptx")


class Target(CompileOption):
    """Where kernels run: "gpu", "cpu" (the SIMT emulator, no GPU needed) or "ptx" (the PTX that
    libNVVM made, run on the CPU by the PTX executor: needs libNVVM, no GPU). Unset: the
    CUTE_DSL_TARGET environment variable, else the GPU with a fallback to the emulator when no
    CUDA device is present."""
    name = "target"
    default = ""

    def __init__(self, value=None):
        if value is not None and value not in TARGETS:
            raise DSLUserCodeError(f"compile target must be one of {', '.join(TARGETS)}, got {value!r}",
                                   code="CONFIG_MALFORMED_COMPILE_OPTIONS")
        super().__init__(value)


# The environment settings a compilation reads besides its options; a direct call of a @jit function
# traces again when one of them changed (direct_call.py).
ENV_ASSERTIONS, ENV_LINE_INFO, ENV_ARCH, ENV_TARGET = (
    "CUTE_DSL_ENABLE_ASSERTIONS", "CUTE_DSL_LINEINFO", "CUTE_DSL_ARCH", "CUTE_DSL_TARGET")
COMPILE_ENV_NAMES = (ENV_ASSERTIONS, ENV_LINE_INFO, ENV_ARCH, ENV_TARGET)


def _arch_for_compile(opts):
    """The architecture a compilation is for: the option, else CUTE_DSL_ARCH, else the first
    device's, else sm_90a."""
    if opts["gpu_arch"]:
        return opts["gpu_arch"]
    env = os.environ.get(ENV_ARCH)
    if env:
        return env
    if _core.cuda_available():
        return _core.device_arch(0)
    return "sm_90a"


def resolve_target(options):
    """The target a compilation uses: the option, else CUTE_DSL_TARGET, else "" (automatic)."""
    if options["target"]:
        return options["target"]
    env = os.environ.get(ENV_TARGET, "").strip().lower()
    if env and env not in TARGETS + ("auto",):
        raise DSLUserCodeError(f"{ENV_TARGET} must be one of {', '.join(TARGETS)}, got {env!r}",
                               code="CONFIG_MALFORMED_COMPILE_OPTIONS")
    return "" if env == "auto" else env


OPTION_CLASSES = (OptLevel, EnableAssertions, GenerateLineInfo, KeepCUBIN, KeepPTX, KeepSASS, EnableTVMFFI,
                  PtxasOptions, GPUArch, LinkLibraries, DumpDir, Target)

# flag -> (option class, takes a value): each option's flag is its name spelled with dashes
# (enable_tvm_ffi: --enable-tvm-ffi); switches take no value.
_FLAGS = {"--" + cls.name.replace("_", "-"): (cls, not issubclass(cls, BoolOption)) for cls in OPTION_CLASSES}


class CompileOptions:
    def __init__(self):
        self.values = {cls.name: cls.default if not issubclass(cls, BoolOption) else False for cls in OPTION_CLASSES}

    def apply(self, option):
        if isinstance(option, type) and issubclass(option, CompileOption):
            if not issubclass(option, BoolOption):
                raise DSLUserCodeError(f"compile option {option.__name__} needs a value",
                                       code="CONFIG_MALFORMED_COMPILE_OPTIONS")
            option = option(True)
        if not isinstance(option, CompileOption):
            raise DSLUserCodeError(f"unknown compile option {option!r}", code="CONFIG_MALFORMED_COMPILE_OPTIONS")
        self.values[option.name] = option.value

    def parse(self, text):
        tokens = shlex.split(text or "")
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            flag, eq, inline = tok.partition("=")
            if flag not in _FLAGS:
                raise DSLUserCodeError(f"unknown compile option {tok!r} in options={text!r}; known options: "
                                       + ", ".join(sorted(_FLAGS)), code="CONFIG_MALFORMED_COMPILE_OPTIONS")
            cls, takes_value = _FLAGS[flag]
            if takes_value:
                if eq:
                    value = inline
                elif i + 1 < len(tokens):
                    i += 1
                    value = tokens[i]
                else:
                    raise DSLUserCodeError(f"compile option {flag} needs a value",
                                           code="CONFIG_MALFORMED_COMPILE_OPTIONS")
                if cls is OptLevel:
                    try:
                        value = int(value)
                    except ValueError:
                        raise DSLUserCodeError(f"--opt-level expects an integer, got {value!r}",
                                               code="CONFIG_INVALID_OPT_LEVEL") from None
                self.apply(cls(value))
            else:
                if eq:
                    raise DSLUserCodeError(f"compile option {flag} takes no value",
                                           code="CONFIG_MALFORMED_COMPILE_OPTIONS")
                self.apply(cls(True))
            i += 1
        return self

    def key(self):
        return tuple(sorted(self.values.items()))

    def __getitem__(self, name):
        return self.values[name]

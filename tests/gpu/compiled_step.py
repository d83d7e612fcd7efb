"""compiled_step.py — what the PyTorch throughput references share to run their step under torch.compile.

Why it exists: a framework's eager mode is not its strongest step; its compiler fuses the
elementwise work around the GEMMs (bias, GELU, LayerNorm, the loss) as a handwritten step
does. tests/gpu/transformer_ddp_reference.py and tests/gpu/resnet_ddp_reference.py take
--compile from here, so the step dpscale is set against can be the compiled one.

  --compile                 wrap the model with its loss in torch.compile
  --compile-mode MODE       torch.compile's mode (default: "default")

Why the default mode: it is what `torch.compile(model)` gives a user, with no CUDA graphs
(which need static inputs and keep memory of their own) and no GEMM autotuning (minutes of
benchmarking kernels at start-up). max-autotune-no-cudagraphs is offered for a run that
wants the compiler's best GEMMs too; reduce-overhead and max-autotune add CUDA graphs.
What is compiled: the model and the loss (the logits' cast and cross-entropy fuse with the
head); the optimizer stays the fused eager one. Compilation happens in the first step
(forward and backward); the warm-up runs before the timed steps and the first step's
seconds are reported apart, and so is any graph compiled during the timed steps.
"""
import time

import torch

COMPILE_MODES = ("default", "max-autotune-no-cudagraphs", "reduce-overhead", "max-autotune")
EAGER_WARMUP, COMPILED_WARMUP = 5, 10


def add_compile_args(ap):
    ap.add_argument("--compile", action="store_true",
                    help="wrap the model and its loss in torch.compile (compilation happens in the warm-up)")
    ap.add_argument("--compile-mode", choices=COMPILE_MODES, default="default",
                    help="torch.compile's mode with --compile (default: default)")


def default_warmup(a):
    """Untimed steps when --warmup is not given: more with --compile, whose first step compiles."""
    return COMPILED_WARMUP if a.compile else EAGER_WARMUP


def compile_label(a):
    """The output field: off, or torch.compile's mode."""
    return a.compile_mode if a.compile else "off"


def maybe_compile(net, a):
    if not a.compile:
        return net
    return torch.compile(net, mode=None if a.compile_mode == "default" else a.compile_mode)


def graphs_compiled():
    """Graphs Dynamo has compiled in this process so far (-1 where this torch does not say)."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except (ImportError, AttributeError, KeyError, TypeError):
        return -1


def new_graphs_since(before):
    """Graphs compiled since graphs_compiled() gave `before` (-1 where this torch does not say)."""
    return graphs_compiled() - before if before >= 0 else -1


def warn_if_compiled_while_timed(prog, new_graphs):
    """One warning line from `prog` where graphs were compiled during the timed steps."""
    if new_graphs > 0:
        print(f"{prog}: warning: {new_graphs} graphs compiled during the timed steps: their median may hold "
              f"compilation; hint: a longer --warmup", flush=True)


def warm_up(step, n):
    """n untimed calls of step(); the seconds of the first one (compilation and autotuning) and of the rest."""
    if n <= 0:
        return 0.0, 0.0
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    for _ in range(n - 1):
        step()
    torch.cuda.synchronize()
    return t1 - t0, time.perf_counter() - t1

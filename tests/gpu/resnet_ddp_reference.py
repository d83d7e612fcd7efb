"""resnet_ddp_reference.py — PyTorch DDP timing (eager, or torch.compile) of torchvision's ResNet-50 training step.

Why it exists: dpscale's ResNet-50 was set against a framework's quoted figures ("cuDNN,
channels-last, bf16 autocast and batch 256 per GPU: 4,733 images/s on 1 GPU; efficiency
0.98 over NVLink and 0.95 through host memory"). Quoting them compares two machines, two
software stacks and two days; this file measures that framework on the same machine, in
the same call as dpscale's own ResNet-50 (configs/resnet50.ini), with the same shapes and
optimizer, so the bars are read against figures measured beside ours; with --compile, the
framework's compiler (tests/gpu/bench_peers.sh).

  torchrun --standalone --nproc_per_node=N tests/gpu/resnet_ddp_reference.py [--batch 256] \\
      [--image 224] [--iters 30 --warmup 5] [--mode autocast|bf16] [--layout channels_last|contiguous] \\
      [--broadcast-buffers on|off] [--compile [--compile-mode MODE]]
  (NCCL_P2P_DISABLE=1 in the caller's environment sends DDP's allreduces through host memory
  instead of NVLink; the output says which as path=nvlink|host, path=none at world size 1)

What it runs, per rank (one GPU each):
  model   torchvision.models.resnet50(num_classes=1000), v1.5 (the stride on the 3x3), 25.557 M
          parameters, train mode: batch norm over each GPU's own batch (no SyncBatchNorm, as
          dpscale); channels_last (NHWC) by default, --layout contiguous for NCHW;
  data    random images N x 3 x H x W (in the model's layout) and random labels, made once on
          the GPU (seed per rank), `batch` per GPU;
  step    zero_grad(set_to_none) + forward + cross-entropy + backward + SGD(lr 0.1, momentum
          0.9, weight_decay 5e-5, fused where torch.optim.SGD takes fused=True, else foreach),
          the optimizer of configs/resnet50.ini (L2 decay on every parameter, as dpscale's);
  compile --compile: the model with its loss under torch.compile (tests/gpu/compiled_step.py says
          which mode and why); the optimizer stays eager; warm-up 10 steps unless --warmup says
          otherwise, the first step's seconds (the compilation) reported apart;
  modes   autocast: fp32 parameters (master weights) under torch.autocast(bf16);
          bf16: the model in bf16 (pure bf16: weights, gradients, momentum, batch norm);
  cuDNN   torch.backends.cudnn.benchmark = True, as a framework user would set it: the first
          warm-up step tries the convolution algorithms, so --warmup should stay >= 1;
  DDP     at world size > 1: DistributedDataParallel, 25 MB buckets (dpscale's default),
          gradient_as_bucket_view; broadcast_buffers on by default (DDP's default, batch norm's
          running statistics from rank 0 before every forward; dpscale does not, --broadcast-buffers
          off drops it); at world size 1 no DDP and no process group, no communication.
Timing and output as tests/gpu/ddp_reference.py: CUDA events per timed step, the slowest rank's
step, median, p05 and p95; the peak memory is torch's max_memory_allocated over the timed steps
(reset after the warm-up, so cuDNN's autotuning workspaces are not in it), the max over ranks.
Rank 0 prints one human line, then one line `RESNET_REFERENCE ... images_per_s=... peak_gib=...
compile=off|MODE first_step_s=... new_graphs=...` (new_graphs: graphs compiled during the timed
steps, 0 when the warm-up held all the compilation, -1 where torch does not say).
"""
import argparse
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off on the lent machines

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from compiled_step import (add_compile_args, compile_label, default_warmup, graphs_compiled, new_graphs_since,  # noqa: E402
                           maybe_compile, warm_up, warn_if_compiled_while_timed)
from ddp_reference import nccl_version, percentile, timed_steps  # noqa: E402  (this folder: the same timing as the MLP's)

CLASSES = 1000


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=256, help="images per GPU per step (default 256)")
    ap.add_argument("--image", type=int, default=224, help="image height and width (default 224)")
    ap.add_argument("--mode", choices=["autocast", "bf16"], default="autocast", help="precision (default autocast)")
    ap.add_argument("--layout", choices=["channels_last", "contiguous"], default="channels_last",
                    help="memory format of the model and the images (default channels_last)")
    ap.add_argument("--broadcast-buffers", choices=["on", "off"], default="on",
                    help="DDP's broadcast of batch norm's running statistics (default on, DDP's default)")
    ap.add_argument("--iters", type=int, default=30, help="timed steps (default 30)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps (default 5, 10 with --compile)")
    ap.add_argument("--seed", type=int, default=1234, help="seed of the weights; the data of rank r uses seed + 1 + r")
    add_compile_args(ap)
    a = ap.parse_args()
    if a.warmup is None:
        a.warmup = default_warmup(a)
    if a.batch < 1 or a.image < 32 or a.iters < 1 or a.warmup < 0:
        ap.error("--batch and --iters must be >= 1, --image >= 32, --warmup >= 0")
    return a


def make_sgd(params):
    """SGD of configs/resnet50.ini, fused where this torch takes fused=True, else foreach."""
    kw = dict(lr=0.1, momentum=0.9, weight_decay=5e-5)
    try:
        return torch.optim.SGD(params, fused=True, **kw), "fused"
    except (TypeError, RuntimeError, ValueError):  # an older torch: no `fused` keyword, or not for these tensors
        return torch.optim.SGD(params, foreach=True, **kw), "foreach"


class WithLoss(nn.Module):
    """The model and its loss as one module, so that torch.compile takes the cross-entropy in too."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return F.cross_entropy(self.model(x).float(), y)


def comm_path(world):
    """What NCCL_P2P_DISABLE in the caller's environment makes of DDP's allreduces."""
    if world == 1:
        return "none"
    v = os.environ.get("NCCL_P2P_DISABLE", "").strip()
    return "host" if v not in ("", "0") else "nvlink"


def main():
    a = parse_args()
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    if world > 1:
        dist.init_process_group("nccl", device_id=device)
    torch.backends.cudnn.benchmark = True
    fmt = torch.channels_last if a.layout == "channels_last" else torch.contiguous_format

    # The same weights on every rank (DDP would broadcast rank 0's anyway).
    torch.manual_seed(a.seed)
    model = torchvision.models.resnet50(num_classes=CLASSES)
    model = model.to(device=device, memory_format=fmt)
    if a.mode == "bf16":
        model = model.to(torch.bfloat16)  # pure bf16, no master weights
    model.train()
    nparams = sum(p.numel() for p in model.parameters())

    # Data: made once, not timed; its own seed per rank.
    gen = torch.Generator(device=device)
    gen.manual_seed(a.seed + 1 + rank)
    x = torch.randn(a.batch, 3, a.image, a.image, device=device, generator=gen)
    x = x.to(dtype=torch.bfloat16 if a.mode == "bf16" else torch.float32, memory_format=fmt)
    y = torch.randint(0, CLASSES, (a.batch,), device=device, generator=gen)

    net = WithLoss(model)
    if world > 1:
        # Made after the model is in its layout, so the bucket views take the parameters' strides.
        net = DistributedDataParallel(net, device_ids=[local_rank], bucket_cap_mb=25, gradient_as_bucket_view=True,
                                      broadcast_buffers=a.broadcast_buffers == "on")
    net = maybe_compile(net, a)  # around DDP, so that Dynamo splits the graph at DDP's buckets
    opt, opt_kind = make_sgd(model.parameters())

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.mode == "autocast"):
            loss = net(x, y)
        loss.backward()
        opt.step()
        return loss

    first_s, _ = warm_up(step, a.warmup)
    torch.cuda.reset_peak_memory_stats(device)  # the timed steps' peak, without cuDNN's autotuning workspaces
    graphs = graphs_compiled()
    times, loss = timed_steps(step, a.iters, world, device)
    new_graphs = new_graphs_since(graphs)
    final_loss = loss.float().item()
    med, p05, p95 = percentile(times, 50), percentile(times, 5), percentile(times, 95)
    images_per_s = world * a.batch / (med / 1e3)
    peak = torch.tensor([torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)],
                        dtype=torch.float64, device=device)
    if world > 1:
        dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    peak_gib, reserved_gib = (v / 2**30 for v in peak.tolist())
    path = comm_path(world)

    if rank == 0:
        print(f"resnet_ddp_reference: ResNet-50 v1.5 (torchvision {torchvision.__version__}, {nparams / 1e6:.3f} M "
              f"parameters), {a.image}x{a.image}, {a.mode}, {a.layout}, {world} x {torch.cuda.get_device_name(device)} "
              f"(torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()} benchmark, NCCL {nccl_version(world)}, "
              f"NCCL_P2P_DISABLE={os.environ.get('NCCL_P2P_DISABLE', '-')}: {path}), batch {a.batch}/GPU, "
              f"{'DDP (broadcast_buffers ' + a.broadcast_buffers + ')' if world > 1 else 'no DDP'}, SGD {opt_kind}, "
              f"{'torch.compile mode ' + a.compile_mode if a.compile else 'eager'}, {a.warmup} warm-up (the first "
              f"{first_s:.1f} s) + {a.iters} timed steps: step {med:.2f} ms median (p05 {p05:.2f}, p95 {p95:.2f}), "
              f"{images_per_s:.0f} images/s, peak memory {peak_gib:.2f} GiB allocated ({reserved_gib:.2f} GiB "
              f"reserved), final loss {final_loss:.4f}", flush=True)
        warn_if_compiled_while_timed("resnet_ddp_reference", new_graphs)
        print(f"RESNET_REFERENCE world={world} batch={a.batch} image={a.image} mode={a.mode} layout={a.layout} "
              f"path={path} optim={opt_kind} step_ms={med:.4f} p05_ms={p05:.4f} p95_ms={p95:.4f} "
              f"images_per_s={images_per_s:.1f} peak_gib={peak_gib:.3f} compile={compile_label(a)} "
              f"first_step_s={first_s:.2f} new_graphs={new_graphs}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""ddp_reference.py — PyTorch DDP timing of the same MLP training step that dpscale times.

Why it exists: tests/gpu/bench_mlp.sh sets dpscale's bars against "framework DDP"
figures. Quoting such figures from elsewhere compares two machines, two software stacks
and two days; this file is an independent implementation of dpscale's step (same model,
same optimizer, same bucket size, same timing rule) that tests/gpu/bench_mlp.sh runs in
the same call of the GPU machine as dpscale, so that the framework's figures are
measured beside ours.

  torchrun --standalone --nproc_per_node=N tests/gpu/ddp_reference.py [--mode bf16|autocast|fp32] ...
  (N = 1 or 2; `python3 -m torch.distributed.run` is the same launcher)

What it runs, per rank (one GPU each):
  model   `layers` nn.Linear layers with bias, input_dim -> hidden_dim x (layers-1) -> classes,
          GELU (tanh approximation) after every hidden layer, softmax cross-entropy on labels;
  data    random inputs and labels made once on the GPU (seed per rank), `batch` per GPU;
  step    zero_grad(set_to_none) + forward + loss + backward + SGD(lr 0.05, momentum 0.9);
  modes   bf16: model.to(bfloat16), i.e. bf16 weights, gradients and optimizer state;
          autocast: fp32 parameters, torch.autocast(bf16) around forward and loss;
          fp32: fp32 everywhere, TF32 off;
  DDP     at world size > 1: DistributedDataParallel, 25 MB buckets (dpscale's default),
          gradient_as_bucket_view; at world size 1: no DDP and no process group at all,
          an honest single-GPU baseline with no communication.
Timing: --warmup untimed steps, then --iters steps each timed by CUDA events on the current
stream; the time of step i is the max over ranks (gathered after the loop); the run is
summarised by the median, p05 and p95 over steps (linear interpolation, as dpscale's stats).
Rank 0 prints one human line, then one machine-readable line starting with DDP_REFERENCE.
"""
import argparse
import os

# NVLink multicast stays off on the lent machines (NCCL reads this when a communicator starts).
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402  (after the environment above)
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch DDP reference of dpscale's MLP training step")
    p.add_argument("--layers", type=int, default=9, help="dense layers (default 9)")
    p.add_argument("--input-dim", type=int, default=8192, help="features of a sample (default 8192)")
    p.add_argument("--hidden-dim", type=int, default=8192, help="width of the hidden layers (default 8192)")
    p.add_argument("--classes", type=int, default=1024, help="output classes (default 1024)")
    p.add_argument("--batch", type=int, default=2048, help="samples per GPU per step (default 2048)")
    p.add_argument("--mode", choices=["bf16", "autocast", "fp32"], default="bf16", help="precision (default bf16)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps (default 5)")
    p.add_argument("--iters", type=int, default=30, help="timed steps (default 30)")
    p.add_argument("--fused", action="store_true", help="fused SGD (default: foreach)")
    p.add_argument("--seed", type=int, default=1234, help="seed of the weights; the data of rank r uses seed + 1 + r")
    a = p.parse_args()
    if a.layers < 1 or a.iters < 1 or a.warmup < 0 or a.batch < 1:
        p.error("--layers, --iters and --batch must be >= 1, --warmup >= 0")
    return a


def build_mlp(args, device):
    """input_dim -> hidden_dim x (layers-1) -> classes, GELU(tanh) after every hidden layer."""
    dims = [args.input_dim] + [args.hidden_dim] * (args.layers - 1) + [args.classes]
    mods = []
    for i in range(args.layers):
        mods.append(nn.Linear(dims[i], dims[i + 1], bias=True, device=device))
        if i < args.layers - 1:
            mods.append(nn.GELU(approximate="tanh"))
    return nn.Sequential(*mods)


def percentile(sorted_values, p):
    """Linear interpolation between closest ranks, as dpscale's stats_percentile_sorted."""
    n = len(sorted_values)
    pos = p / 100.0 * (n - 1)
    lo = int(pos)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def slowest_rank_times(starts, ends, world, device):
    """Each timed step's milliseconds on its slowest rank, sorted (outside the timed region)."""
    mine = torch.tensor([s.elapsed_time(e) for s, e in zip(starts, ends)], dtype=torch.float64, device=device)
    if world > 1:
        gathered = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(gathered, mine)
        mine = torch.stack(gathered).max(dim=0).values
    return sorted(mine.tolist())


def timed_steps(step, iters, world, device):
    """`iters` calls of step() between CUDA events, every rank starting together (after the
    caller's warm-up): the slowest rank's milliseconds of each step, sorted, and what the
    last step returned."""
    if world > 1:
        dist.barrier()  # every rank starts the timed steps together
    stream = torch.cuda.current_stream()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    out = None
    for i in range(iters):
        starts[i].record(stream)
        out = step()
        ends[i].record(stream)  # DDP makes the current stream wait for its allreduces before this
    torch.cuda.synchronize()
    return slowest_rank_times(starts, ends, world, device), out


def nccl_version(world):
    """NCCL's version as torch reports it ("unused" on one rank)."""
    if world == 1:
        return "unused"
    v = torch.cuda.nccl.version()  # a tuple (2, 28, 3) in recent releases, an int (22803) in old ones
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)


def main():
    args = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    if world > 1:
        dist.init_process_group("nccl", device_id=device)

    if args.mode == "fp32":
        torch.backends.cuda.matmul.allow_tf32 = False  # plain fp32 GEMMs, as dpscale's fp32
        torch.backends.cudnn.allow_tf32 = False

    # The same weights on every rank (DDP would broadcast rank 0's anyway).
    torch.manual_seed(args.seed)
    model = build_mlp(args, device)
    if args.mode == "bf16":
        model = model.to(torch.bfloat16)  # pure bf16: weights, gradients, momentum
    nparams = sum(p.numel() for p in model.parameters())

    # Data: made once, not timed; its own seed per rank, never zeros.
    gen = torch.Generator(device=device)
    gen.manual_seed(args.seed + 1 + rank)
    x = torch.randn(args.batch, args.input_dim, device=device, generator=gen)
    y = torch.randint(0, args.classes, (args.batch,), device=device, generator=gen)
    if args.mode == "bf16":
        x = x.to(torch.bfloat16)

    if world > 1:
        # 25 MB buckets as dpscale's comm.bucket_mb default; DDP's first bucket is 1 MB, as dpscale's.
        model = DistributedDataParallel(model, device_ids=[local_rank], bucket_cap_mb=25, gradient_as_bucket_view=True)
    if args.fused:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, fused=True)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=True)

    use_autocast = args.mode == "autocast"

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=use_autocast):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times, loss = timed_steps(step, args.iters, world, device)
    final_loss = loss.float().item()
    med, p05, p95 = percentile(times, 50), percentile(times, 5), percentile(times, 95)
    global_batch = args.batch * world
    samples_per_s = global_batch / (med / 1e3)

    if rank == 0:
        print(f"ddp_reference: {args.mode}, {world} x {torch.cuda.get_device_name(device)} "
              f"(torch {torch.__version__}, NCCL {nccl_version(world)}, NCCL_P2P_DISABLE={os.environ.get('NCCL_P2P_DISABLE', '-')}), "
              f"MLP {args.layers} layers {args.input_dim} -> {args.hidden_dim} x{args.layers - 1} -> {args.classes} "
              f"({nparams / 1e6:.1f} M parameters), batch {args.batch}/GPU, {'DDP' if world > 1 else 'no DDP'}, "
              f"SGD {'fused' if args.fused else 'foreach'}, {args.warmup} warm-up + {args.iters} timed steps: "
              f"step {med:.3f} ms median (p05 {p05:.3f}, p95 {p95:.3f}), {samples_per_s:.1f} samples/s, "
              f"final loss {final_loss:.4f}", flush=True)
        print(f"DDP_REFERENCE mode={args.mode} world={world} batch={args.batch} layers={args.layers} "
              f"input_dim={args.input_dim} hidden_dim={args.hidden_dim} classes={args.classes} "
              f"step_ms={med:.4f} p05_ms={p05:.4f} p95_ms={p95:.4f} samples_per_s={samples_per_s:.1f}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

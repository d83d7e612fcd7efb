"""transformer_ddp_reference.py — PyTorch DDP timing (eager, or torch.compile) of the transformer steps dpscale times.

Why it exists: tests/gpu/bench_transformers.sh sets dpscale's bars against a framework's
eager mode (flash attention, fused AdamW) on BERT-Large and GPT-2-small, and tests/gpu/bench_peers.sh
against its compiler (--compile). This file measures that framework on the same machine, in the
same call as dpscale, with the same shapes, so the figures the bars are read against are
measured beside ours, not quoted.

  torchrun --standalone --nproc_per_node=N tests/gpu/transformer_ddp_reference.py \\
      --model bert|gpt [--layers L --width C --heads H --seq T --vocab V] [--batch B] \\
      [--mode autocast|bf16] [--untied] [--iters 20 --warmup 5] [--compile [--compile-mode MODE]]

What it runs, per rank (one GPU each):
  model   bert: post-LN encoder (token + position + segment embeddings with a LayerNorm);
          gpt: pre-LN decoder with a final LayerNorm, causal; both FFN 4C with tanh GELU,
          attention through F.scaled_dot_product_attention (flash or memory-efficient
          kernels), dropout off, the head tied to the token embedding (--untied: its own);
  loss    cross-entropy on every position (the bars' setting for both models);
  data    random tokens made once on the GPU, per rank;
  step    zero_grad + forward + loss + backward + AdamW(fused=True, lr 1e-4, wd 0.01);
          for GPT-2 small, nanoGPT's model and step (fused QKV, SDPA, tied head, autocast, fused AdamW);
  compile --compile: the model with its loss under torch.compile (tests/gpu/compiled_step.py says
          which mode and why); the optimizer stays eager; warm-up 10 steps unless --warmup says
          otherwise, the first step's seconds (the compilation) reported apart;
  modes   autocast: fp32 parameters (master weights) under torch.autocast(bf16);
          bf16: the model in bf16 (pure bf16, no master weights);
  DDP     at world size > 1, 25 MB buckets, gradient_as_bucket_view; at world size 1 no DDP.
Timing and output as tests/gpu/ddp_reference.py: CUDA events, the slowest rank's step, median,
then one line `TRANSFORMER_REFERENCE ... tokens_per_s=... compile=off|MODE first_step_s=...
new_graphs=...` (new_graphs: graphs compiled during the timed steps, 0 when the warm-up held
all the compilation, -1 where torch does not say).
"""
import argparse
import os

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast stays off on the lent machines

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from compiled_step import (add_compile_args, compile_label, default_warmup, graphs_compiled, new_graphs_since,  # noqa: E402
                           maybe_compile, warm_up, warn_if_compiled_while_timed)
from ddp_reference import percentile, timed_steps  # noqa: E402  (this folder: the same timing as the MLP's)

PRESETS = {"bert": dict(layers=24, width=1024, heads=16, seq=512, vocab=30522),
           "gpt": dict(layers=12, width=768, heads=12, seq=1024, vocab=50257)}


class Block(nn.Module):
    def __init__(self, C, H, pre_ln, causal):
        super().__init__()
        self.H, self.pre_ln, self.causal = H, pre_ln, causal
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def attn(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in self.qkv(x).split(C, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def ffn(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate="tanh"))

    def forward(self, x):
        if self.pre_ln:
            x = x + self.attn(self.ln1(x))
            return x + self.ffn(self.ln2(x))
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ffn(x))


class Transformer(nn.Module):
    def __init__(self, a):
        super().__init__()
        bert = a.model == "bert"
        self.bert = bert
        self.wte, self.wpe = nn.Embedding(a.vocab, a.width), nn.Embedding(a.seq, a.width)
        self.wse = nn.Embedding(2, a.width) if bert else None
        self.lne = nn.LayerNorm(a.width) if bert else None
        self.blocks = nn.ModuleList(Block(a.width, a.heads, not bert, not bert) for _ in range(a.layers))
        self.lnf = None if bert else nn.LayerNorm(a.width)
        self.head = nn.Linear(a.width, a.vocab, bias=False) if a.untied else None
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, tokens, segments):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe.weight[:T]
        if self.bert:
            x = self.lne(x + self.wse(segments))
        for b in self.blocks:
            x = b(x)
        if self.lnf is not None:
            x = self.lnf(x)
        return x @ (self.head.weight if self.head is not None else self.wte.weight).T


class WithLoss(nn.Module):
    """The model and its loss as one module, so that torch.compile fuses the logits' cast into the
    cross-entropy (nanoGPT's model returns its loss for the same reason)."""

    def __init__(self, model, vocab):
        super().__init__()
        self.model, self.vocab = model, vocab

    def forward(self, tokens, segments, targets):
        return F.cross_entropy(self.model(tokens, segments).view(-1, self.vocab).float(), targets)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["bert", "gpt"], required=True)
    for k in ("layers", "width", "heads", "seq", "vocab"):
        ap.add_argument(f"--{k}", type=int, default=None, help="default: the preset (BERT-Large, GPT-2 small)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--mode", choices=["autocast", "bf16"], default="autocast")
    ap.add_argument("--untied", action="store_true", help="a head of its own instead of the token embedding")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=None, help="untimed steps (default 5, 10 with --compile)")
    add_compile_args(ap)
    a = ap.parse_args()
    if a.warmup is None:
        a.warmup = default_warmup(a)
    for k, v in PRESETS[a.model].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    if world > 1:
        dist.init_process_group("nccl", device_id=device)
    torch.manual_seed(1234)
    model = Transformer(a).to(device)
    if a.mode == "bf16":
        model = model.to(torch.bfloat16)
    nparams = sum(p.numel() for p in model.parameters())
    gen = torch.Generator(device=device)
    gen.manual_seed(1235 + rank)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq), device=device, generator=gen)
    segments = (torch.arange(a.seq, device=device) >= a.seq // 2).long().expand(a.batch, a.seq)
    targets = torch.randint(0, a.vocab, (a.batch * a.seq,), device=device, generator=gen)
    net = WithLoss(model, a.vocab)
    if world > 1:
        net = DistributedDataParallel(net, device_ids=[local_rank], bucket_cap_mb=25, gradient_as_bucket_view=True)
    net = maybe_compile(net, a)  # around DDP, so that Dynamo splits the graph at DDP's buckets
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, fused=True)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.mode == "autocast"):
            loss = net(tokens, segments, targets)
        loss.backward()
        opt.step()
        return loss

    first_s, _ = warm_up(step, a.warmup)
    graphs = graphs_compiled()
    times, loss = timed_steps(step, a.iters, world, device)
    new_graphs = new_graphs_since(graphs)
    med = percentile(times, 50)
    tokens_per_s = a.batch * world * a.seq / (med / 1e3)
    if rank == 0:
        print(f"transformer_ddp_reference: {a.model} {a.layers} x {a.width}, {a.heads} heads, seq {a.seq}, vocab "
              f"{a.vocab} ({nparams / 1e6:.1f} M parameters, head {'untied' if a.untied else 'tied'}), {a.mode}, "
              f"{world} x {torch.cuda.get_device_name(device)} (torch {torch.__version__}), batch {a.batch}/GPU, "
              f"{'torch.compile mode ' + a.compile_mode if a.compile else 'eager'}, {a.warmup} warm-up steps (the "
              f"first {first_s:.1f} s) + {a.iters} timed: step {med:.2f} ms median, {tokens_per_s:.0f} tokens/s, "
              f"loss {loss.float().item():.4f}", flush=True)
        warn_if_compiled_while_timed("transformer_ddp_reference", new_graphs)
        print(f"TRANSFORMER_REFERENCE model={a.model} mode={a.mode} world={world} batch={a.batch} seq={a.seq} "
              f"step_ms={med:.4f} p05_ms={percentile(times, 5):.4f} p95_ms={percentile(times, 95):.4f} "
              f"tokens_per_s={tokens_per_s:.1f} compile={compile_label(a)} first_step_s={first_s:.2f} "
              f"new_graphs={new_graphs}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

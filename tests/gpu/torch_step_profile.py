"""torch_step_profile.py — where a torch.compile training step's GPU time goes, kernel by kernel.

Why it exists: to close a gap to torch.compile one must know what Inductor fuses that dpscale does
not. This profiles a few compiled steps with torch.profiler and prints the GPU kernels by time,
grouped (GEMM / convolution library kernels, Inductor's Triton kernels, the optimizer, the rest),
with each group's share and how many kernels a step launches.

  python3 tests/gpu/torch_step_profile.py resnet50 [--batch 256] [--steps 5] [--top 40]
  python3 tests/gpu/torch_step_profile.py gpt2 [--batch 16]

resnet50: torchvision's, channels-last, bf16 autocast over fp32 parameters, fused SGD (momentum
0.9), random images; gpt2: GPT-2 small (nanoGPT-style: fused QKV, SDPA, tied head), autocast, fused
AdamW, random tokens. Never part of `make test`.
"""
import argparse
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H, self.ln1, self.ln2 = H, nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.out = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, -1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L=12, C=768, H=12, T=1024, V=50257):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks, self.lnf = nn.ModuleList(Block(C, H) for _ in range(L)), nn.LayerNorm(C)

    def forward(self, tok, tgt):
        x = self.wte(tok) + self.wpe.weight[: tok.shape[1]]
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.T
        return F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), tgt.view(-1))


def setup(name, batch):
    if name == "resnet50":
        import torchvision
        model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
        x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (batch,), device="cuda")
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, fused=True)
        loss_fn = lambda m: F.cross_entropy(m(x), y)  # noqa: E731
    else:
        model = GPT().cuda()
        tok = torch.randint(0, 50257, (batch, 1024), device="cuda")
        tgt = torch.randint(0, 50257, (batch, 1024), device="cuda")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        loss_fn = lambda m: m(tok, tgt)  # noqa: E731
    compiled = torch.compile(model)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(compiled)
        loss.backward()
        opt.step()
    return step


def group(name):
    n = name.lower()
    if any(s in n for s in ("gemm", "xmma", "cutlass", "sm90", "sm80", "cublas", "conv", "wgrad", "dgrad", "fprop",
                            "implicit", "cudnn", "nhwc", "nchw")):
        return "GEMM / convolution (cuBLAS, cuDNN)"
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if n.startswith("triton") or "triton" in n:
        return "Inductor (Triton)"
    if "multi_tensor" in n or "fused_sgd" in n or "adam" in n or "foreach" in n:
        return "optimizer"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=["resnet50", "gpt2"])
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args()
    batch = a.batch or (256 if a.model == "resnet50" else 16)
    step = setup(a.model, batch)
    for _ in range(8):  # compile and settle
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(a.steps):
            step()
        torch.cuda.synchronize()
    kernels = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            k = kernels[e.name]
            k[0] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            k[1] += 1
    total = sum(t for t, _ in kernels.values())
    groups = collections.defaultdict(lambda: [0.0, 0])
    for n, (t, c) in kernels.items():
        g = groups[group(n)]
        g[0] += t
        g[1] += c
    print(f"{a.model}, batch {batch}, torch {torch.__version__}, torch.compile default mode: "
          f"{total / a.steps / 1e3:.2f} ms of kernels a step, {sum(c for _, c in kernels.values()) / a.steps:.0f} launches")
    for g, (t, c) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print(f"  {g:<40s} {t / a.steps / 1e3:8.2f} ms {100 * t / total:5.1f} %  {c / a.steps:6.0f} launches")
    print(f"the {a.top} longest kernels (ms a step, launches a step):")
    for n, (t, c) in sorted(kernels.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"  {t / a.steps / 1e3:8.3f} {c / a.steps:5.0f}  {n[:150]}")


if __name__ == "__main__":
    main()

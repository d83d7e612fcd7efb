"""torch_reference.py — is dpscale's handwritten step the model it claims to be?

Reads a file of `dpscale dump` (one step of one rank laid open: the model's tensor
table, the initial parameters, the step's inputs, its loss and the gradient of every
parameter), builds the same model in PyTorch from the table (an independent
implementation: nn.functional's layer_norm, softmax attention, tanh GELU and
cross_entropy, autograd for the gradients), loads the same parameters and inputs,
and compares the loss and the gradient of every tensor.

  python3 tests/gpu/torch_reference.py DUMP.h5 [--tol 1e-4] [--dtype float64|float32]

The reference runs in float64 by default, so the error measured is dpscale's own. Per
tensor: max |g_dpscale - g_torch| / max |g_torch|; the check passes when the loss's
relative difference and every tensor's error are within --tol (1e-4 for an fp32 dump;
give a bf16 dump a bf16 tolerance, e.g. 2e-2). Prints one line per tensor (the worst
first) and a last line `TORCH_REFERENCE ... PASS|FAIL`; exit status 0 on PASS.

It needs torch, numpy and h5py (the GPU machine has them; `make test` never runs it).
Models: mlp, gpt (pre-LN decoder, causal, final LN, tied head, next-token loss on every
position) and bert (post-LN encoder, token + position + segment embeddings with a
LayerNorm, tied head on the gathered masked rows), as src/model/families/ writes them."""
import argparse
import math
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load(path, dtype):
    f = h5py.File(path, "r")
    if "dump" not in f or "model" not in f:
        sys.exit(f"{path}: not a file of dpscale dump (no /dump or /model group)")
    cfg = {k: (text(v) if isinstance(v, (bytes, str)) else v) for k, v in f["config"].attrs.items()}
    table = f["model/tensors"][:]
    params = f["dump/params"][:].astype(np.float64)
    grads = f["dump/grads"][:].astype(np.float64)
    P = {}
    for row in table:
        name, off, cnt = text(row["name"]), int(row["offset"]), int(row["count"])
        shape = (int(row["cols"]),) if text(row["kind"]) == "vector" else (int(row["rows"]), int(row["cols"]))
        P[name] = torch.tensor(params[off:off + cnt].reshape(shape), dtype=dtype, requires_grad=True)
    G = {text(r["name"]): grads[int(r["offset"]):int(r["offset"]) + int(r["count"])] for r in table}
    inputs = {k: v[:] for k, v in f["dump/inputs"].items()}
    return f, cfg, P, G, inputs, float(f["dump"].attrs["loss"]), int(f["dump"].attrs["batch"])


def attention(qkv, B, T, C, H, causal):
    D = C // H
    q, k, v = (t.reshape(B, T, H, D).transpose(1, 2) for t in qkv.split(C, dim=-1))
    s = q @ k.transpose(-1, -2) / math.sqrt(D)
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return (s.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)


def linear(x, P, name):
    return x @ P[name + ".weight"].T + P[name + ".bias"]


def ln(x, P, name, C):
    return F.layer_norm(x, (C,), P[name + ".gamma"], P[name + ".beta"], eps=1e-5)


def transformer_loss(cfg, P, inputs, B, bert):
    L, C, H, T, V = (int(cfg[k]) for k in ("model.layers", "model.hidden_dim", "model.heads", "model.seq_len",
                                          "model.vocab"))
    tokens = torch.tensor(inputs["tokens"].astype(np.int64)).reshape(B, T)
    targets = torch.tensor(inputs["targets"].astype(np.int64))
    x = P["wte"][tokens] + P["wpe"][:T]
    if bert:
        x = ln(x + P["wse"][torch.tensor(inputs["segments"].astype(np.int64)).reshape(B, T)], P, "lne", C)
    for l in range(L):
        b = f"block{l}."
        if bert:  # post-LN
            x = ln(x + linear(attention(linear(x, P, b + "qkv"), B, T, C, H, False), P, b + "proj"), P, b + "ln1", C)
            x = ln(x + linear(F.gelu(linear(x, P, b + "fc1"), approximate="tanh"), P, b + "fc2"), P, b + "ln2", C)
        else:  # pre-LN
            x = x + linear(attention(linear(ln(x, P, b + "ln1", C), P, b + "qkv"), B, T, C, H, True), P, b + "proj")
            x = x + linear(F.gelu(linear(ln(x, P, b + "ln2", C), P, b + "fc1"), approximate="tanh"), P, b + "fc2")
    if bert:
        h = x.reshape(B * T, C)[torch.tensor(inputs["mask_rows"].astype(np.int64))]
    else:
        h = ln(x, P, "lnf", C).reshape(B * T, C)
    # dpscale pads the head's rows (wte's) to a multiple of 64 with zeros; the loss reads the
    # real vocabulary, so the padding's gradient here is 0, as dpscale's must be
    return F.cross_entropy(h @ P["wte"][:V].T, targets)


def mlp_loss(cfg, P, inputs, B):
    L = int(cfg["model.layers"])
    x = torch.tensor(inputs["x"], dtype=P["layer0.weight"].dtype).reshape(B, -1)
    act = (lambda t: F.gelu(t, approximate="tanh")) if cfg["model.activation"] == "gelu" else F.relu
    for l in range(L):
        x = linear(x, P, f"layer{l}")
        if l < L - 1:
            x = act(x)
    return F.cross_entropy(x, torch.tensor(inputs["labels"].astype(np.int64)))


def grad_errors(P, G):
    """Per tensor, the worst first: (max |g_dpscale - g_torch| / max |g_torch|, name, max |g_torch|),
    g_torch the .grad of P[name] in the layout of dpscale's G[name]."""
    rows = []
    for name, p in P.items():
        ref = p.grad.detach().cpu().numpy().reshape(-1)
        err = float(np.abs(G[name] - ref).max() / max(np.abs(ref).max(), 1e-30))
        rows.append((err, name, float(np.abs(ref).max())))
    return sorted(rows, reverse=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", help="a file written by `dpscale dump`")
    ap.add_argument("--tol", type=float, default=1e-4, help="relative error bar (default 1e-4, for fp32)")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64", help="the reference's precision")
    a = ap.parse_args()
    dtype = getattr(torch, a.dtype)
    f, cfg, P, G, inputs, dp_loss, B = load(a.dump, dtype)
    kind = text(f["model"].attrs["type"])
    if kind == "mlp":
        loss = mlp_loss(cfg, P, inputs, B)
    elif kind in ("gpt", "bert"):
        loss = transformer_loss(cfg, P, inputs, B, kind == "bert")
    else:
        sys.exit(f"{a.dump}: model type {kind} is not known to this script")
    loss.backward()
    loss_err = abs(loss.item() - dp_loss) / abs(loss.item())
    rows = grad_errors(P, G)
    print(f"{a.dump}: {kind}, batch {B}, {sum(p.numel() for p in P.values())} parameters in {len(P)} tensors; "
          f"reference in {a.dtype}")
    print(f"  loss: dpscale {dp_loss:.8f}, torch {loss.item():.8f}, relative difference {loss_err:.3e}")
    print(f"  {'tensor':<28s} {'max|ref|':>10s} {'rel err':>10s}")
    for err, name, scale in rows:
        print(f"  {name:<28s} {scale:10.3e} {err:10.3e}")
    worst = max([loss_err] + [r[0] for r in rows])
    ok = worst <= a.tol
    print(f"TORCH_REFERENCE model={kind} tensors={len(rows)} loss_rel={loss_err:.3e} worst={worst:.3e} "
          f"worst_tensor={rows[0][1]} tol={a.tol:g} {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Time a model's kernels on this GPU and write a kernel table goodput loads.

    python3 scripts/profile_kernels.py --config path/to/config.json --tp 1 > my-gpu.csv

then, in a GPU profile (a .yaml passed to --gpu):  kernels: my-gpu.csv

What it times, one tensor-parallel shard of the model (the same shapes
goodput's cost model prices; docs/simulator.md, "Kernel tables"):
  gemm               the weight GEMMs (q/k/v, o, gate_up, down, LM head) at
                     m = 1, 2, 4, ... tokens, bf16 (F.linear, i.e. cuBLAS);
                     weights rotated over copies so the L2 cache does not
                     hold them between calls
  prefill_attention  causal attention of batch prompts of len tokens, one layer
  decode_attention   one query per sequence over len cached tokens, one layer
  allreduce          when run under torchrun with several GPUs: NCCL
                     all-reduce of the activations' sizes
Attention uses vLLM's FlashAttention when importable (vllm.vllm_flash_attn),
else flash_attn, else PyTorch's scaled_dot_product_attention. Every figure
is the median of --reps replays of a CUDA graph of --calls calls (no launch
gaps), µs per call.

--synthetic writes the same rows with roofline times (--tflops, --gbs)
instead of measuring: for checking the table's format without a GPU; its
comment says so. --plan lists the rows it would time.
"""

import argparse
import csv
import json
import statistics
import sys

HEADER = ["kernel", "dtype", "m", "n", "k", "batch", "len", "heads", "kv_heads", "head_dim", "gpus", "bytes", "time_us"]


def shapes(cfg, tp):
    """The per-shard weight GEMMs (n, k) and attention heads of a HF config."""
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads", heads)
    hd = cfg.get("head_dim") or h // heads
    inter = cfg["intermediate_size"]
    vocab = cfg["vocab_size"]
    if heads % tp:
        raise SystemExit(f"--tp {tp} does not divide {heads} heads")
    qh, kh = heads // tp, max(1, kv // tp)
    gemms = [
        ((qh + 2 * kh) * hd, h),  # q, k, v
        (h, qh * hd),  # o
        (2 * inter // tp, h),  # gate_up
        (h, inter // tp),  # down
        (vocab // tp, h),  # LM head
    ]
    return gemms, (qh, kh, hd)


def powers(lo, hi):
    x = lo
    while x <= hi:
        yield x
        x *= 2


def plan(args, cfg):
    """Every row to time, without its time."""
    gemms, (qh, kh, hd) = shapes(cfg, args.tp)
    rows = []
    for n, k in gemms:
        for m in powers(1, args.max_tokens):
            rows.append(dict(kernel="gemm", dtype="bf16", m=m, n=n, k=k))
    for b in powers(1, args.max_batch):
        for length in powers(16, args.max_len):
            if b * length <= args.max_tokens * 4:
                rows.append(dict(kernel="prefill_attention", dtype="bf16", batch=b, len=length, heads=qh, kv_heads=kh, head_dim=hd))
            rows.append(dict(kernel="decode_attention", dtype="bf16", batch=b, len=length - 1, heads=qh, kv_heads=kh, head_dim=hd))
    if args.world > 1:
        for tokens in powers(1, args.max_tokens):
            rows.append(dict(kernel="allreduce", dtype="bf16", gpus=args.world, bytes=tokens * cfg["hidden_size"] * 2))
    return rows


def roofline_us(row, tflops, gbs):
    """A synthetic time: the larger of compute and memory, at least 4 µs."""
    k = row["kernel"]
    if k == "gemm":
        flops = 2 * row["m"] * row["n"] * row["k"]
        byts = 2 * (row["n"] * row["k"] + row["m"] * (row["n"] + row["k"]))
    elif k in ("prefill_attention", "decode_attention"):
        b, length, qh, kh, hd = row["batch"], row["len"], row["heads"], row["kv_heads"], row["head_dim"]
        q = length if k == "prefill_attention" else 1
        pairs = b * (q * (q + 1) / 2 if q > 1 else length + 1)
        flops = 4 * pairs * qh * hd
        byts = 2 * b * (length + 1) * kh * hd * 2
    else:
        flops, byts = 0, 2 * row["bytes"]
    return max(flops / (tflops * 1e12), byts / (gbs * 1e9)) * 1e6 + 4


def measure(rows, args):
    import torch
    import torch.nn.functional as F

    dev = torch.device("cuda")
    bf16 = torch.bfloat16

    def graphed_us(fn):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(args.calls):
                fn()
        g.replay()
        torch.cuda.synchronize()
        times = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3 / args.calls)
        return statistics.median(times)

    attn = None
    try:
        from vllm.vllm_flash_attn import flash_attn_func as attn  # noqa: F401
    except ImportError:
        try:
            from flash_attn import flash_attn_func as attn  # noqa: F401
        except ImportError:
            attn = None

    def attention(q, k, v, causal):
        if attn is not None:  # (batch, len, heads, head_dim)
            return attn(q, k, v, causal=causal)
        return F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal, enable_gqa=True)

    weights = {}
    for row in rows:
        k = row["kernel"]
        if k == "gemm":
            key = (row["n"], row["k"])
            if key not in weights:
                copies = max(1, min(8, (256 << 20) // (row["n"] * row["k"] * 2)))
                weights[key] = [torch.randn(row["n"], row["k"], device=dev, dtype=bf16) for _ in range(copies)]
            ws = weights[key]
            x = torch.randn(row["m"], row["k"], device=dev, dtype=bf16)
            i = [0]

            def fn(ws=ws, x=x, i=i):
                i[0] = (i[0] + 1) % len(ws)
                F.linear(x, ws[i[0]])

            row["time_us"] = graphed_us(fn)
        elif k in ("prefill_attention", "decode_attention"):
            b, length, qh, kh, hd = row["batch"], row["len"], row["heads"], row["kv_heads"], row["head_dim"]
            q_len = length if k == "prefill_attention" else 1
            kv_len = length if k == "prefill_attention" else length + 1
            try:
                q = torch.randn(b, q_len, qh, hd, device=dev, dtype=bf16)
                kk = torch.randn(b, kv_len, kh, hd, device=dev, dtype=bf16)
                vv = torch.randn(b, kv_len, kh, hd, device=dev, dtype=bf16)
            except torch.OutOfMemoryError:
                continue
            row["time_us"] = graphed_us(lambda: attention(q, kk, vv, k == "prefill_attention"))
        elif k == "allreduce":
            import torch.distributed as dist

            t = torch.randn(row["bytes"] // 2, device=dev, dtype=bf16)
            row["time_us"] = graphed_us(lambda: dist.all_reduce(t))
    return [r for r in rows if "time_us" in r]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", required=True, help="the model's Hugging Face config.json")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel degree whose shard to time")
    p.add_argument("--max-tokens", type=int, default=8192, help="largest m of a GEMM (max_num_batched_tokens)")
    p.add_argument("--max-batch", type=int, default=256)
    p.add_argument("--max-len", type=int, default=16384)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--calls", type=int, default=8)
    p.add_argument("--plan", action="store_true", help="list the rows to time and exit")
    p.add_argument("--synthetic", action="store_true", help="roofline times instead of measuring (format check)")
    p.add_argument("--tflops", type=float, default=800)
    p.add_argument("--gbs", type=float, default=3000)
    args = p.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    cfg = cfg.get("text_config", cfg)
    args.world = 1
    if not (args.plan or args.synthetic):
        import os

        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            import torch
            import torch.distributed as dist

            dist.init_process_group("nccl")
            torch.cuda.set_device(dist.get_rank() % torch.cuda.device_count())
            args.world = dist.get_world_size()
    rows = plan(args, cfg)
    if args.plan:
        for r in rows:
            print(r)
        return
    if args.synthetic:
        for r in rows:
            r["time_us"] = round(roofline_us(r, args.tflops, args.gbs), 3)
        source = f"SYNTHETIC roofline times ({args.tflops} TFLOP/s, {args.gbs} GB/s, 4 µs floor), not measured: a format sample"
    else:
        import torch

        rows = measure(rows, args)
        source = f"measured by scripts/profile_kernels.py on {torch.cuda.get_device_name()} (torch {torch.__version__}), CUDA-graph replays"
        if args.world > 1 and torch.distributed.get_rank() != 0:
            return
    out = sys.stdout
    out.write(f"# goodput kernel table: {source}\n")
    out.write(f"# model {args.config}, tp {args.tp}\n")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    for r in rows:
        w.writerow([r.get(c, "") if c != "time_us" else f"{r['time_us']:.4g}" for c in HEADER])


if __name__ == "__main__":
    main()

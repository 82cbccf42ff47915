#!/usr/bin/python3
"""Check pipecast's decoder transformers against PyTorch, step for step.

Debian ships neither the transformers library nor safetensors, so this
script writes both families in torch 1.13 from their definitions
(shared/REFERENCES.md, "Transformers"), under Hugging Face's module names
and layouts, and reads and writes .safetensors itself with numpy:

* GPT-2 (GPT2LMHeadModel): transformer.wte + transformer.wpe, pre-norm
  blocks (ln_1, attn, ln_2, mlp; LayerNorm eps from config.json), Conv1D
  projections y = x.W + b with W stored [in, out] (attn.c_attn, attn.c_proj,
  mlp.c_fc, mlp.c_proj), causal softmax(q.k^T / sqrt(head_dim)), gelu_new
  0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), transformer.ln_f, and
  lm_head tied to wte;
* Llama (LlamaForCausalLM): model.embed_tokens, RMSNorm
  x.rsqrt(mean(x^2) + eps).w, q/k/v/o projections without bias,
  grouped-query attention repeating each K/V head, RoPE in the rotate-half
  form with inv_freq = 1/theta^(2i/hd) computed as Hugging Face computes
  it (in float32, a buffer that follows the model's dtype), the MLP
  down(silu(gate(x)).up(x)), model.norm and an untied lm_head.

Every operation runs in the tensors' own dtype (where Hugging Face's code
upcasts a norm's variance or the softmax to float32, a float64 run here
stays float64), so that the float64 step is exact arithmetic's stand-in.

For each model this

1. runs `pipecast models export` to a .safetensors file (or .npz with
   --format npz): the state_dict in Hugging Face's names and layouts
   (GPT-2's Conv1D weights [in, out], its lm_head stored once as
   transformer.wte.weight), config.json in the metadata, then one training
   step: input (token ids [B, S]), target (each position's next token),
   logits [B, S, V], loss (mean cross entropy over every position) and
   grad.<name> for every parameter;
2. checks the file's format: the header as the reference writer writes it
   (8-byte aligned with spaces, compact JSON, __metadata__ first, tensors
   sorted by dtype then name, offsets tiling the data), byte for byte
   against this script's own writer of the reference's algorithm;
3. builds the model in torch from the file's config.json, loads the
   weights with load_state_dict(strict=True) (GPT-2's lm_head.weight from
   wte, as tie_weights does), runs the same input in float32 and float64,
   the mean cross entropy and the backward, and compares pipecast's
   logits, loss and every gradient with torch's, by the rule of
   scripts/check_torchvision.py: error max|a - b| / max|b| against torch
   float32 within the bound (logits and loss 1e-5, gradients 1e-3), or
   else pipecast's error against torch float64 at most 2 times torch
   float32's largest gradient error against float64 (its own, for logits
   and loss), with the median over the gradients of pipecast's error
   against float64 at most 2 times torch float32's median;
4. the way back: draws new weights and a new step in torch, writes them
   (torch's layout: Conv1D [in, out]; GPT-2's tied head once) with the
   step's input, target, logits, loss and gradients to a .safetensors file
   of this script's writer, and runs `pipecast models import` on it, which
   must load every parameter and replay torch's step within the bounds
   (pipecast float32 against torch float32); for GPT-2 also a file that
   holds lm_head.weight beside wte (loads) and one whose lm_head.weight
   differs (refused).

Exit status 0 when every comparison passes, 1 otherwise. Run from the
repository root with Debian's python3-torch and python3-numpy:

    /usr/bin/python3 scripts/check_transformers.py
    /usr/bin/python3 scripts/check_transformers.py --models gpt2 --pipecast ./pipecast --keep --workdir /tmp/check
"""

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# Each model with the pipecast size flags it is checked at (and --seq).
MODELS = {
    "gpt2": ["--layers", "4"],
    "tinyllama-1.1b": ["--layers", "4", "--width", "0.125"],
}

LOGITS_BOUND = 1e-5
LOSS_BOUND = 1e-5
GRAD_BOUND = 1e-3
NOISE_FACTOR = 2
STEP_KEYS = ("input", "target", "logits", "loss")

# safetensors' element types in the order of the reference's Dtype
# enumeration, which orders a written file (larger index first).
DTYPES = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
          "I32", "U32", "F32", "F64", "I64", "U64"]
NUMPY = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"),
         "F16": np.dtype("<f2"), "I32": np.dtype("<i4")}
ST_NAME = {v.str: k for k, v in NUMPY.items()}


def st_dtype(a):
    """The safetensors name of a numpy array's element type."""
    return ST_NAME[a.dtype.newbyteorder("<").str]


# --- safetensors, read and written with numpy -------------------------------

def read_safetensors(path):
    """Returns (tensors, metadata, problems): the tensors as numpy arrays,
    the __metadata__ dict, and what differs from the reference writer's
    layout."""
    problems = []
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = raw[8:8 + n]
    text = header.decode("utf-8")
    if n % 8:
        problems.append("header of %d bytes, not a multiple of 8" % n)
    if text.rstrip(" ") != text.rstrip():
        problems.append("header padded with other than spaces")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            problems.append("a key twice in %s" % keys)
        return dict(pairs)
    obj = json.loads(text, object_pairs_hook=no_duplicates)
    meta = obj.pop("__metadata__", None)
    tensors, at = {}, 0
    data = raw[8 + n:]
    for name, info in sorted(obj.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, end = info["data_offsets"]
        if begin != at:
            problems.append("%s at %d, the data before end at %d" % (name, begin, at))
        at = end
        dt = NUMPY[info["dtype"]]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if count * dt.itemsize != end - begin:
            problems.append("%s: %d bytes for shape %s" % (name, end - begin, info["shape"]))
            continue
        if begin % dt.itemsize:
            problems.append("%s: data at %d, not aligned to %d" % (name, begin, dt.itemsize))
        tensors[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(info["shape"])
    if at != len(data):
        problems.append("tensors cover %d of %d data bytes" % (at, len(data)))
    again = serialize_safetensors(tensors, meta)
    if again != raw:
        problems.append("not byte-identical to the reference writer's layout")
    return tensors, meta or {}, problems


def serialize_safetensors(tensors, metadata=None):
    """The reference writer's file (safetensors/src/tensor.rs, prepare and
    serialize): tensors sorted by dtype, descending, then name; compact
    JSON, __metadata__ first (its keys sorted here); the header padded
    with spaces to a multiple of 8 bytes."""
    arrays = {k: np.asarray(v) if np.asarray(v).flags.c_contiguous else np.asarray(v).copy() for k, v in tensors.items()}
    order = sorted(arrays, key=lambda k: (-DTYPES.index(st_dtype(arrays[k])), k.encode()))
    header, at = {}, 0
    if metadata:
        header["__metadata__"] = {k: metadata[k] for k in sorted(metadata)}
    for k in order:
        a = arrays[k]
        header[k] = {"dtype": st_dtype(a), "shape": list(a.shape),
                     "data_offsets": [at, at + a.nbytes]}
        at += a.nbytes
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + b"".join(arrays[k].astype(arrays[k].dtype.newbyteorder("<")).tobytes() for k in order)


def read_npz(path):
    data = np.load(path)
    meta = {}
    if "config.json" in data.files:
        meta["config"] = bytes(data["config.json"]).decode()
    return {k: data[k] for k in data.files if k != "config.json"}, meta, []


# --- the two families, from their definitions -------------------------------

class Conv1D(nn.Module):
    """Hugging Face's Conv1D: y = x.W + b, W stored [in, out]."""

    def __init__(self, n_out, n_in):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).reshape(*x.shape[:-1], -1)


def causal_attention(q, k, v):
    """softmax(q.k^T / sqrt(hd)) over the positions up to each query's."""
    s = q.shape[-2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool).tril()
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return scores.softmax(dim=-1) @ v


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, self.heads = c["n_embd"], c["n_head"]
        self.ln_1 = nn.LayerNorm(d, eps=c["layer_norm_epsilon"])
        self.attn = nn.Module()
        self.attn.c_attn, self.attn.c_proj = Conv1D(3 * d, d), Conv1D(d, d)
        self.ln_2 = nn.LayerNorm(d, eps=c["layer_norm_epsilon"])
        self.mlp = nn.Module()
        self.mlp.c_fc, self.mlp.c_proj = Conv1D(4 * d, d), Conv1D(d, 4 * d)

    def forward(self, x):
        b, s, d = x.shape
        heads = lambda t: t.reshape(b, s, self.heads, -1).transpose(1, 2)
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(d, dim=2)
        ctx = causal_attention(heads(q), heads(k), heads(v)).transpose(1, 2).reshape(b, s, d)
        h = x + self.attn.c_proj(ctx)
        return h + self.mlp.c_proj(gelu_new(self.mlp.c_fc(self.ln_2(h))))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["n_embd"]
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(c["vocab_size"], d)
        self.transformer.wpe = nn.Embedding(c["n_positions"], d)
        self.transformer.h = nn.ModuleList(GPT2Block(c) for _ in range(c["n_layer"]))
        self.transformer.ln_f = nn.LayerNorm(d, eps=c["layer_norm_epsilon"])
        self.lm_head = nn.Linear(d, c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tie_weights

    def forward(self, ids):
        t = self.transformer
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, i = c["hidden_size"], c["intermediate_size"]
        self.heads, self.kv = c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = d // self.heads
        self.self_attn = nn.Module()
        for n, out in (("q_proj", self.heads * self.hd), ("k_proj", self.kv * self.hd), ("v_proj", self.kv * self.hd)):
            setattr(self.self_attn, n, nn.Linear(d, out, bias=False))
        self.self_attn.o_proj = nn.Linear(self.heads * self.hd, d, bias=False)
        self.mlp = nn.Module()
        self.mlp.gate_proj, self.mlp.up_proj = nn.Linear(d, i, bias=False), nn.Linear(d, i, bias=False)
        self.mlp.down_proj = nn.Linear(i, d, bias=False)
        self.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        a = self.self_attn
        h = self.input_layernorm(x)
        q = a.q_proj(h).reshape(b, s, self.heads, self.hd).transpose(1, 2)
        k = a.k_proj(h).reshape(b, s, self.kv, self.hd).transpose(1, 2)
        v = a.v_proj(h).reshape(b, s, self.kv, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv  # repeat_kv: query head j reads K/V head j // rep
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        ctx = causal_attention(q, k, v).transpose(1, 2).reshape(b, s, -1)
        x = x + a.o_proj(ctx)
        h = self.post_attention_layernorm(x)
        return x + self.mlp.down_proj(F.silu(self.mlp.gate_proj(h)) * self.mlp.up_proj(h))


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], d)
        self.model.layers = nn.ModuleList(LlamaLayer(c) for _ in range(c["num_hidden_layers"]))
        self.model.norm = RMSNorm(d, c["rms_norm_eps"])
        self.lm_head = nn.Linear(d, c["vocab_size"], bias=False)
        hd = d // c["num_attention_heads"]
        # As LlamaRotaryEmbedding: float32, then whatever dtype the model
        # is moved to.
        inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, ids):
        t = torch.arange(ids.shape[1], dtype=self.inv_freq.dtype)
        emb = torch.cat((torch.outer(t, self.inv_freq),) * 2, dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.model.norm(x))


def build(config):
    return {"gpt2": GPT2LMHeadModel, "llama": LlamaForCausalLM}[config["model_type"]](config)


def tied(config):
    return config.get("tie_word_embeddings", config["model_type"] == "gpt2")


def step(model, ids, target, dtype):
    """One training step of model in dtype: logits, loss and the gradient
    of every parameter (a tied one once, as named_parameters lists it)."""
    model = model.to(dtype).train()
    model.zero_grad(set_to_none=True)
    logits = model(ids)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    loss.backward()
    grads = {n: p.grad.detach().numpy().copy() for n, p in model.named_parameters()}
    return logits.detach().numpy(), loss.detach().numpy(), grads


# --- the checks ------------------------------------------------------------

def rel_error(got, want):
    """max|got - want| / max|want|; 0 when both are 0."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    diff = float(np.max(np.abs(got - want))) if want.size else 0.0
    if not np.isfinite(diff):
        return float("inf")
    if diff == 0:
        return 0.0
    scale = float(np.max(np.abs(want)))
    return diff / scale if scale > 0 else float("inf")


def run(cmd):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def judge(ours, f32, f64, verbose):
    """check_torchvision.py's rule over the tensors ours, torch float32
    and torch float64 hold (dicts by name); returns (ok, summary)."""
    names = list(f64)
    err = {n: rel_error(ours[n], f32[n]) for n in names}
    acc = {n: rel_error(ours[n], f64[n]) for n in names}
    noise = {n: rel_error(f32[n], f64[n]) for n in names}
    gnames = [n for n in names if n.startswith("grad.")]
    noise_max = max(noise[n] for n in gnames)
    noise_median = float(np.median([noise[n] for n in gnames]))
    acc_median = float(np.median([acc[n] for n in gnames]))
    median_ok = acc_median <= max(GRAD_BOUND, NOISE_FACTOR * noise_median)
    width = max(len(n) for n in names)
    print("%-*s  %10s  %8s  %10s  %10s  %s" % (width, "tensor", "error", "bound", "ours-f64", "torch-f64", "ok"))
    verdicts = {}
    for n in names:
        bound = LOGITS_BOUND if n == "logits" else LOSS_BOUND if n == "loss" else GRAD_BOUND
        allowed = NOISE_FACTOR * (noise_max if n.startswith("grad.") else noise[n])
        verdicts[n] = "ok" if err[n] <= bound else "noise" if acc[n] <= max(bound, allowed) and median_ok else "FAIL"
        if verbose or verdicts[n] != "ok" or n in ("logits", "loss"):
            print("%-*s  %10.3g  %8.0e  %10.3g  %10.3g  %s" % (width, n, err[n], bound, acc[n], noise[n], verdicts[n]))
    worst = max(gnames, key=lambda n: err[n])
    fails = sum(1 for n in gnames if verdicts[n] == "FAIL")
    within = sum(1 for n in gnames if err[n] <= GRAD_BOUND)
    print("%d gradients: %d within the bound, %d within float32's noise, %d FAIL; worst %s %.3g"
          % (len(gnames), within, len(gnames) - within - fails, fails, worst, err[worst]))
    worst64 = max(gnames, key=lambda n: acc[n] / max(noise[n], 1e-300))
    print("against float64: median gradient error ours %.3g, torch's %.3g; largest ours %.3g, torch's %.3g: %s"
          % (acc_median, noise_median, max(acc[n] for n in gnames), noise_max, "ok" if median_ok else "FAIL"))
    print("  largest ratio ours/torch's against float64: %s %.3g / %.3g" % (worst64, acc[worst64], noise[worst64]))
    ok = "FAIL" not in verdicts.values() and median_ok
    return ok, {"logits": err["logits"], "loss": err["loss"], "logits_f64": acc["logits"],
                "loss_f64": acc["loss"], "torch_logits_f64": noise["logits"],
                "median_grad": float(np.median([err[n] for n in gnames])), "worst_grad": err[worst],
                "worst_grad_name": worst, "acc_median": acc_median, "noise_median": noise_median,
                "acc_max": max(acc[n] for n in gnames), "noise_max": noise_max}


def init_torch(model, seed):
    """Weights as the families' _init_weights draw them, N(0, 0.02), with
    every bias and norm weight drawn too, so that no layout error hides
    behind a zero or a one."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(".weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
            elif "ln" in n or "norm" in n:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=g))


def way_back(name, flags, config, args, workdir):
    """torch's weights and step in a .safetensors file, imported by
    pipecast."""
    torch.manual_seed(1)
    model = build(config)
    init_torch(model, 1)
    vocab, seq = config["vocab_size"], args.seq
    ids = torch.randint(0, vocab, (2, seq + 1), generator=torch.Generator().manual_seed(2))
    x, target = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    state = {k: v.detach().numpy().copy() for k, v in model.named_parameters()}  # a tied one once
    logits, loss, grads = step(model, x, target, torch.float32)
    tensors = dict(state, input=x.numpy(), target=target.numpy(), logits=logits, loss=loss,
                   **{"grad." + k: v for k, v in grads.items()})
    meta = {"format": "pt", "config": json.dumps(config)}
    ok, result = True, {}
    variants = [("torch", tensors, True)]
    if tied(config):
        both = dict(state, **{"lm_head.weight": state["transformer.wte.weight"]})
        bad = dict(both, **{"lm_head.weight": state["transformer.wte.weight"] + np.float32(1e-3)})
        variants += [("torch_with_lm_head", both, True), ("torch_other_lm_head", bad, False)]
    for label, t, want_ok in variants:
        path = os.path.join(workdir, "%s_%s.safetensors" % (name, label))
        with open(path, "wb") as f:
            f.write(serialize_safetensors(t, meta))
        r = run(args.pipecast + ["models", "import", "--model", name] + flags + ["--output", "json", path])
        if not want_ok:
            good = r.returncode == 2 and "differs" in r.stderr
            print("import of %s: exit %d (%s): %s" % (label, r.returncode, r.stderr.strip().splitlines()[-1] if r.stderr else "",
                                                       "ok, refused" if good else "FAIL"))
            ok = ok and good
        else:
            doc = json.loads(r.stdout) if r.returncode == 0 else {}
            loaded = doc.get("loaded")
            good = r.returncode == 0 and loaded == len(state)
            check = doc.get("check")
            if check is not None:
                good = good and check["logits_rel_diff"] <= LOGITS_BOUND and check["loss_rel_diff"] <= LOSS_BOUND \
                    and check["grads_rel_diff"] <= GRAD_BOUND and check["grads_compared"] == len(grads)
                result = check
            print("import of %s: exit %d, %s of %d tensors loaded%s: %s" % (
                label, r.returncode, loaded, len(state),
                "" if check is None else "; replay against torch float32: logits %.3g, loss %.3g, gradients %.3g (worst of %d: %s)"
                % (check["logits_rel_diff"], check["loss_rel_diff"], check["grads_rel_diff"], check["grads_compared"], check["worst_grad"]),
                "ok" if good else "FAIL"))
            if r.returncode != 0:
                sys.stderr.write(r.stderr)
            ok = ok and good
        if not args.keep:
            os.remove(path)
    return ok, result


def check_model(name, args, workdir):
    flags = MODELS[name] + ["--seq", str(args.seq)]
    path = os.path.join(workdir, "%s.%s" % (name, args.format))
    if not (args.reuse and os.path.exists(path)):
        r = run(args.pipecast + ["models", "export", "--model", name] + flags +
                ["--batch", "2", "--seed", "1", "--out", path])
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            print("FAIL %s: export exited %d" % (name, r.returncode))
            return False, {}
    tensors, meta, problems = (read_safetensors if args.format == "safetensors" else read_npz)(path)
    for p in problems:
        print("FAIL format: " + p)
    print("format: %d tensors, %d problems%s" % (len(tensors), len(problems),
          "; byte-identical to the reference writer's layout" if args.format == "safetensors" and not problems else ""))
    ok = not problems and meta.get("format", "pt") == "pt" and "config" in meta
    config = json.loads(meta["config"])
    print("config.json: " + json.dumps(config, sort_keys=True))

    state = {k: torch.from_numpy(v.copy()) for k, v in tensors.items()
             if k not in STEP_KEYS and not k.startswith("grad.")}
    if tied(config):
        if "lm_head.weight" in state:
            print("FAIL: lm_head.weight stored beside transformer.wte.weight")
            ok = False
        state["lm_head.weight"] = state["transformer.wte.weight"]
    model = build(config)
    model.load_state_dict(state, strict=True)
    ids, target = torch.from_numpy(tensors["input"].copy()), torch.from_numpy(tensors["target"].copy())
    print("step: input %s %s, target %s, logits %s" % (tensors["input"].dtype, list(ids.shape), list(target.shape),
                                                      list(tensors["logits"].shape)))
    lg32, ls32, gr32 = step(model, ids, target, torch.float32)
    lg64, ls64, gr64 = step(model, ids, target, torch.float64)
    missing = [k for k in gr32 if "grad." + k not in tensors]
    extra = [k for k in tensors if k.startswith("grad.") and k[5:] not in gr32]
    if missing or extra:
        print("FAIL gradients: missing %s, unexpected %s" % (missing, extra))
        ok = False
    keys = ["logits", "loss"] + ["grad." + k for k in gr32 if k not in missing]
    pick = lambda lg, ls, gr: {k: lg if k == "logits" else ls if k == "loss" else gr[k[5:]] for k in keys}
    ours = {k: tensors[k] for k in keys}
    step_ok, summary = judge(ours, pick(lg32, ls32, gr32), pick(lg64, ls64, gr64), args.verbose)
    back_ok, back = way_back(name, flags, config, args, workdir)
    summary["back"] = back
    if not args.keep and not args.reuse:
        os.remove(path)
    return ok and step_ok and back_ok, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated models (default: %(default)s)")
    ap.add_argument("--seq", type=int, default=64, help="sequence length (default: %(default)s)")
    ap.add_argument("--format", choices=("safetensors", "npz"), default="safetensors",
                    help="format of pipecast's export (default: %(default)s)")
    ap.add_argument("--pipecast", default="go run ./cmd/pipecast", help="command that runs pipecast (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    ap.add_argument("--workdir", default=None, help="directory for the files (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the files")
    ap.add_argument("--reuse", action="store_true", help="use an existing export in --workdir")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every gradient's row")
    args = ap.parse_args()
    args.pipecast = shlex.split(args.pipecast)
    workdir = args.workdir or tempfile.mkdtemp(prefix="pipecast-check-")
    os.makedirs(workdir, exist_ok=True)
    print("torch %s, numpy %s" % (torch.__version__, np.__version__))
    torch.set_num_threads(args.threads)
    results, all_ok = {}, True
    for name in args.models.split(","):
        if name not in MODELS:
            ap.error("unknown model %r (have %s)" % (name, ", ".join(MODELS)))
        print("\n== %s (%s --seq %d, batch 2, seed 1, %s)" % (name, " ".join(MODELS[name]), args.seq, args.format))
        ok, summary = check_model(name, args, workdir)
        results[name] = summary
        all_ok = all_ok and ok
        print("%s: %s" % (name, "PASS" if ok else "FAIL"))

    print("\nerrors of pipecast against torch float32 (logits, loss, gradients: median and worst) and against")
    print("torch float64 (logits; median gradient, beside torch float32's); the way back: pipecast's replay of")
    print("torch's step (logits, loss, worst gradient):")
    print("%-15s %-9s %-9s %-9s %-38s %-9s %-19s %s" % ("model", "logits", "loss", "grad med", "worst gradient",
                                                      "logit-f64", "grad-f64 ours/torch", "back"))
    for name, s in results.items():
        if s:
            b = s.get("back") or {}
            print("%-15s %-9.3g %-9.3g %-9.3g %-38s %-9.3g %-19s %s" % (
                name, s["logits"], s["loss"], s["median_grad"], "%.3g %s" % (s["worst_grad"], s["worst_grad_name"][5:]),
                s["logits_f64"], "%.3g/%.3g" % (s["acc_median"], s["noise_median"]),
                "%.3g %.3g %.3g" % (b["logits_rel_diff"], b["loss_rel_diff"], b["grads_rel_diff"]) if b else "-"))
    print("PASS" if all_ok else "FAIL")
    if not args.workdir and not args.keep:
        try:
            os.rmdir(workdir)
        except OSError:
            pass
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

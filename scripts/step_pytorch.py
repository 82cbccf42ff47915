#!/usr/bin/python3
"""Time PyTorch's single-device training step on the CPU or a GPU, for
comparison with `pipecast profile --schedule single`
(scripts/step-vs-pytorch.sh on the CPU, scripts/gpu-run.sh on a GPU).

One step is what pipecast's runner does: forward in training mode, mean
cross entropy, backward, and the optimizer pipecast gives the model. For
the CNNs that is torch.optim.SGD with pipecast's defaults (lr 0.01,
momentum 0.9, weight decay 1e-4) on torchvision's network at width 1
with --classes outputs: vgg16_bn, resnet50, or inception_v3 with
aux_logits=False and init_weights=False (the default initialisation is
slow to build and does not change the time). For gpt2 it is
torch.optim.AdamW with its defaults (pipecast's too: lr 1e-3, betas 0.9
and 0.999, eps 1e-8, weight decay 0.01) on GPT-2 at width 1 with --layers
decoder layers, sequences of --seq tokens and GPT-2's 50257-token
vocabulary: the model scripts/check_transformers.py writes from Hugging
Face's definition, with GPT-2's dropout (0.1 after the embeddings, on the
attention probabilities and after each projection back to the residual
stream) as Hugging Face's GPT2LMHeadModel trains, and the loss the mean
over every position's next token. Inputs and labels are random, drawn
once. It runs --warmup steps, then --steps timed ones, and prints one line
of JSON: the model, the settings, every timed step's seconds and their
median.

With --device cuda the network and data live on the GPU, each step is
timed from a synchronised start to a synchronised end, and TF32 is off
for both matrix products and cuDNN convolutions (pipecast computes in
float32 throughout, so the comparison is float32 against float32).

    /usr/bin/python3 scripts/step_pytorch.py --model resnet50 --image 64 --batch 32
"""

import argparse
import json
import statistics
import sys
import time

import os

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_transformers as decoders  # noqa: E402  (beside this script)

NETWORKS = {
    "vgg16bn": lambda classes: torchvision.models.vgg16_bn(num_classes=classes),
    "resnet50": lambda classes: torchvision.models.resnet50(num_classes=classes),
    "inceptionv3": lambda classes: torchvision.models.inception_v3(
        num_classes=classes, aux_logits=False, init_weights=False),
    "gpt2": None,  # gpt2() below: a language model, sized by --seq and --layers
}

GPT2_DROPOUT = 0.1  # GPT-2's embd_pdrop, attn_pdrop and resid_pdrop


class GPT2Block(decoders.GPT2Block):
    """check_transformers.py's GPT-2 block with GPT-2's dropouts, as
    Hugging Face's GPT2Block trains (attention dropout on the
    probabilities, residual dropout after attn.c_proj and mlp.c_proj)."""

    def forward(self, x):
        b, s, d = x.shape
        heads = lambda t: t.reshape(b, s, self.heads, -1).transpose(1, 2)
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(-1, -2) / (q.shape[-1] ** 0.5)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        probs = F.dropout(scores.softmax(dim=-1), GPT2_DROPOUT, self.training)
        ctx = (probs @ v).transpose(1, 2).reshape(b, s, d)
        h = x + F.dropout(self.attn.c_proj(ctx), GPT2_DROPOUT, self.training)
        mlp = self.mlp.c_proj(decoders.gelu_new(self.mlp.c_fc(self.ln_2(h))))
        return h + F.dropout(mlp, GPT2_DROPOUT, self.training)


class GPT2(decoders.GPT2LMHeadModel):
    """check_transformers.py's GPT2LMHeadModel with GPT-2's dropouts."""

    def __init__(self, c):
        super().__init__(c)
        self.transformer.h = torch.nn.ModuleList(GPT2Block(c) for _ in range(c["n_layer"]))
        for m in self.modules():
            if isinstance(m, (torch.nn.Linear, torch.nn.Embedding, decoders.Conv1D)):
                torch.nn.init.normal_(m.weight, std=0.02)

    def forward(self, ids):
        t = self.transformer
        x = t.wte(ids) + t.wpe(torch.arange(ids.shape[1], device=ids.device))
        x = F.dropout(x, GPT2_DROPOUT, self.training)
        for block in t.h:
            x = block(x)
        return self.lm_head(t.ln_f(x))


def gpt2(layers):
    return GPT2({"n_embd": 768, "n_head": 12, "n_layer": layers, "n_positions": 1024,
                 "vocab_size": 50257, "layer_norm_epsilon": 1e-5})


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=sorted(NETWORKS))
    ap.add_argument("--image", type=int, help="input height and width (the CNNs)")
    ap.add_argument("--seq", type=int, default=128, help="tokens per sequence (gpt2)")
    ap.add_argument("--layers", type=int, default=4, help="decoder layers (gpt2)")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--steps", type=int, default=3, help="timed steps")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps run first")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu or cuda (cuda:N)")
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0:
        sys.exit("step_pytorch: --steps must be at least 1 and --warmup at least 0")

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    lm = args.model == "gpt2"
    if not lm and args.image is None:
        sys.exit("step_pytorch: --image is required for " + args.model)
    if lm:
        net = gpt2(args.layers).to(dev)
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
        vocab = 50257
        x = torch.randint(0, vocab, (args.batch, args.seq), device=dev)
        labels = torch.randint(0, vocab, (args.batch * args.seq,), device=dev)
    else:
        net = NETWORKS[args.model](args.classes).to(dev)
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        x = torch.randn(args.batch, 3, args.image, args.image, device=dev)
        labels = torch.randint(0, args.classes, (args.batch,), device=dev)
    net.train()
    loss_fn = torch.nn.CrossEntropyLoss()

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    times = []
    for i in range(args.warmup + args.steps):
        sync()
        start = time.perf_counter()
        opt.zero_grad()
        out = net(x)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), labels)
        loss.backward()
        opt.step()
        sync()
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            times.append(elapsed)

    print(json.dumps({
        "model": args.model,
        "image": args.image,
        "seq": args.seq if lm else None,
        "layers": args.layers if lm else None,
        "batch": args.batch,
        "classes": args.classes,
        "threads": args.threads,
        "device": torch.cuda.get_device_name(dev) if cuda else "cpu",
        "torch": torch.__version__,
        "step_seconds": times,
        "step_seconds_median": statistics.median(times),
    }))


if __name__ == "__main__":
    main()

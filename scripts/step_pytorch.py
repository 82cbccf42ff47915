#!/usr/bin/python3
"""Time PyTorch's single-device training step on the CPU or a GPU, for
comparison with `pipecast profile --schedule single`
(scripts/step-vs-pytorch.sh on the CPU, scripts/gpu-run.sh on a GPU).

One step is what pipecast's runner does: forward in training mode, mean
cross entropy, backward, and torch.optim.SGD with pipecast's defaults
(lr 0.01, momentum 0.9, weight decay 1e-4). The network is torchvision's
at width 1 with --classes outputs: vgg16_bn, resnet50, or inception_v3
with aux_logits=False and init_weights=False (the default initialisation
is slow to build and does not change the time). Inputs and labels are
random, drawn once. It runs --warmup steps, then --steps timed ones, and
prints one line of JSON: the model, the settings, every timed step's
seconds and their median.

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

import torch
import torchvision

NETWORKS = {
    "vgg16bn": lambda classes: torchvision.models.vgg16_bn(num_classes=classes),
    "resnet50": lambda classes: torchvision.models.resnet50(num_classes=classes),
    "inceptionv3": lambda classes: torchvision.models.inception_v3(
        num_classes=classes, aux_logits=False, init_weights=False),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, choices=sorted(NETWORKS))
    ap.add_argument("--image", type=int, required=True, help="input height and width")
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
    net = NETWORKS[args.model](args.classes).to(dev)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, args.image, args.image, device=dev)
    labels = torch.randint(0, args.classes, (args.batch,), device=dev)

    def sync():
        if cuda:
            torch.cuda.synchronize(dev)

    times = []
    for i in range(args.warmup + args.steps):
        sync()
        start = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(net(x), labels)
        loss.backward()
        opt.step()
        sync()
        elapsed = time.perf_counter() - start
        if i >= args.warmup:
            times.append(elapsed)

    print(json.dumps({
        "model": args.model,
        "image": args.image,
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

#!/usr/bin/python3
"""Check pipecast's networks against torchvision's, step for step.

For each model this

1. runs `pipecast models export` (batch 2, seed 1, 1000 classes), which
   writes the model's initial state_dict and one training step (input,
   target, logits, loss and every parameter's gradient) to a .npz file;
2. checks the file with numpy's own .npy parser: every entry format 1.0,
   C order, dtype <f4 or <i8, its data aligned to 64 bytes, and counts the
   entries numpy.save would write byte for byte alike;
3. loads the state_dict into torchvision's network with
   load_state_dict(strict=True), sets every Dropout's p to 0, runs the same
   input in training mode, the mean cross entropy and the backward, and
   compares the logits, the loss and every gradient with pipecast's;
4. the way back: saves a torchvision network's own state_dict with
   numpy.savez and runs `pipecast models import` on it, which must load it
   (exit 0) with every tensor.

Error of a tensor: max|pipecast - torch| / max|torch|, the infinity norms
over the whole tensor. A gradient that is zero in exact arithmetic, the
bias of a convolution followed directly by training-mode batch norm (VGG's:
the batch mean removes it), holds only rounding noise; its error is taken
relative to the largest gradient element of the whole model instead (the
floor), the scale of that noise. Bounds: logits and loss 1e-4, gradients
1e-3.

Two properties of float32 training steps decide what such a comparison can
show, and the check measures both instead of assuming them away:

* Max-pool near-ties. Where the two largest inputs of a max-pool window
  differ by less than float32's rounding (relative gap < 1e-5), either
  implementation may route the window's gradient to either input, and
  every gradient upstream changes with it. The check finds such windows in
  torch's forward and replays torch's step with each combination of routings
  (up to 2^4); pipecast is compared with the combination it matches best.
* ReLU near-ties. Where a ReLU's input lies within float32's rounding of
  zero (relative to the largest input of that call, below 1e-6), either
  implementation may pass or stop its gradient there, and the gradients of
  the batch norm before it change with it: its bias's gradient, a sum over
  every position, by the whole gradient of that one position, while its
  weight's barely moves (the normalised input there is about zero). VGG16-BN
  at 64 px, batch 2, has two such inputs after features.8 below 5e-7. The
  check finds them in torch's forward, and after the max-pool routings
  replays the nearest (up to 4) one at a time, each routing kept that
  brings torch's step closer to pipecast's.
* Chaotic gradients. At initialisation, ResNet-50's and Inception-v3's
  gradients through training-mode batch norm amplify rounding errors so far
  that torch's own float32 gradients differ from its float64 ones by
  percents, some tensors by over 10 %, and change by as much when only its
  thread count changes. The check therefore also runs torch's step in
  float64, with the same routings, as exact arithmetic, and measures
  pipecast's float32 and torch's float32 against it. A tensor beyond its
  bound still passes ("noise") when pipecast's error against float64 is at
  most 2 times torch float32's largest error against float64 on any
  gradient of the model, provided that the median over the model's
  gradients of pipecast's error against float64 is at most 2 times
  torch's: pipecast must be about as close to exact arithmetic as torch
  is. For a well-conditioned model (VGG16-BN, where torch float32 is
  within 1e-5 of float64) this admits nothing beyond the bounds.

Exit status 0 when every comparison passes, 1 otherwise.

Run from the repository root (it needs python3-torch, python3-torchvision
and python3-numpy; see scripts/README.md):

    /usr/bin/python3 scripts/check_torchvision.py
    /usr/bin/python3 scripts/check_torchvision.py --models resnet50 --pipecast ./pipecast
"""

import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import torch
import torchvision

# Each model with the input size it is checked at and torchvision's
# constructor at pipecast's configuration. Inception-v3 runs at its own
# 299: below 128 its last modules see 1x1 maps, where batch norm of a
# batch of 2 normalises 2 values per channel, and torch's own float32
# logits then differ from float64 by tens of percent.
MODELS = {
    "vgg16bn": (64, lambda: torchvision.models.vgg16_bn()),
    "resnet50": (64, lambda: torchvision.models.resnet50()),
    "inceptionv3": (299, lambda: torchvision.models.inception_v3(
        aux_logits=False, transform_input=False, init_weights=True)),
}

LOGITS_BOUND = 1e-4
LOSS_BOUND = 1e-4
GRAD_BOUND = 1e-3
NOISE_FACTOR = 2
TIE_GAP = 1e-5
# A ReLU input is formed from values of about its largest input's size,
# and float32 rounds it by about 6e-8 of those: within 1e-6 of the largest
# its sign is rounding's to decide.
RELU_TIE_GAP = 1e-6
MAX_TIES = 4

STEP_KEYS = ("input", "target", "logits", "loss")


def is_export_key(name):
    return name in STEP_KEYS or name.startswith("grad.")


def rel_error(got, want, floor=0.0):
    """max|got - want| / max(max|want|, floor); 0 when both are 0."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    diff = np.max(np.abs(got - want)) if want.size else 0.0
    if not np.isfinite(diff):
        return float("inf")
    if diff == 0:
        return 0.0
    scale = max(np.max(np.abs(want)), floor)
    return float(diff / scale) if scale > 0 else float("inf")


def biases_before_batchnorm(model):
    """Names of conv biases whose output goes straight into a BatchNorm2d,
    following the order of nn.Sequential containers."""
    names = set()
    for prefix, module in model.named_modules():
        if not isinstance(module, torch.nn.Sequential):
            continue
        children = list(module.named_children())
        for (name, a), (_, b) in zip(children, children[1:]):
            if isinstance(a, torch.nn.Conv2d) and a.bias is not None \
                    and isinstance(b, torch.nn.BatchNorm2d):
                names.add((prefix + "." if prefix else "") + name + ".bias")
    return names


def check_format(path):
    """Checks every entry of the archive with numpy's own .npy parser;
    returns the problems and how many entries numpy.save would write
    byte for byte alike."""
    problems, identical, entries = [], 0, 0
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            entries += 1
            if not info.filename.endswith(".npy"):
                problems.append("%s: not a .npy entry" % info.filename)
                continue
            raw = z.read(info.filename)
            with z.open(info.filename) as f:
                version = np.lib.format.read_magic(f)
                if version != (1, 0):
                    problems.append("%s: format %s, want 1.0" % (info.filename, version))
                    continue
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            offset = 10 + int.from_bytes(raw[8:10], "little")
            if fortran or dtype.str not in ("<f4", "<i8"):
                problems.append("%s: fortran %s, dtype %s" % (info.filename, fortran, dtype.str))
            if offset % 64 != 0:
                problems.append("%s: data at byte %d, not a multiple of 64" % (info.filename, offset))
            if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(raw) - offset:
                problems.append("%s: %d data bytes for shape %s" % (info.filename, len(raw) - offset, shape))
                continue
            arr = np.frombuffer(raw[offset:], dtype=dtype).reshape(shape)
            with tempfile.TemporaryFile() as t:
                np.save(t, arr)
                t.seek(0)
                identical += t.read() == raw
    return problems, identical, entries


class TorchStep:
    """torchvision's training step on an export's weights and data, with
    max-pool routings optionally flipped at given near-tie windows."""

    def __init__(self, ctor, data):
        self.ctor, self.data = ctor, data
        self.state = {k: torch.from_numpy(data[k]) for k in data.files if not is_export_key(k)}

    def run(self, flips=(), find_ties=False, dtype=torch.float32):
        torch.manual_seed(0)
        model = self.ctor()
        model.load_state_dict(self.state, strict=True)
        for m in model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        model = model.to(dtype).train()
        ties = []
        pools = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.MaxPool2d)]
        for name, pool in pools:
            pool.register_forward_pre_hook(self._hook(name, pool, flips, ties if find_ties else None))
        x = torch.from_numpy(self.data["input"]).to(dtype)
        target = torch.from_numpy(self.data["target"])
        # Every ReLU of these networks goes through torch.nn.functional.relu
        # (nn.ReLU's forward calls it; Inception-v3's BasicConv2d calls it
        # directly), so one wrapper sees them all, named by call order.
        relu = torch.nn.functional.relu
        torch.nn.functional.relu = self._relu(relu, flips, ties if find_ties else None)
        try:
            logits = model(x)
        finally:
            torch.nn.functional.relu = relu
        loss = torch.nn.CrossEntropyLoss()(logits, target)
        loss.backward()
        grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
        self.model = model
        return logits.detach().numpy(), loss.detach().numpy(), grads, ties

    @staticmethod
    def _relu(relu, flips, ties):
        calls = [0]

        def wrapped(x, inplace=False):
            name = "relu#%d" % calls[0]
            calls[0] += 1
            if ties is not None:
                ties.extend((name,) + t for t in relu_ties(x.detach()))
            mine = [f for f in flips if f[0] == name]
            if mine:
                # The input's sign set against the routing the float32
                # step found (in float64 too, whichever sign its own
                # rounding gave): the forward moves by less than the
                # rounding, and the gradient there stops where it passed,
                # or passes.
                x = x.clone()
                with torch.no_grad():
                    for _, at, _, _, passed in mine:
                        x[at] = -abs(x[at]) if passed else abs(x[at])
            return relu(x, inplace=inplace)
        return wrapped

    @staticmethod
    def _hook(name, pool, flips, ties):
        def hook(module, inputs):
            (x,) = inputs
            if ties is not None:
                # Overlapping windows may share their two largest inputs:
                # one routing decides them all.
                for t in near_ties(x.detach(), pool):
                    if (name,) + t[:2] not in {u[:3] for u in ties}:
                        ties.append((name,) + t)
            mine = [f for f in flips if f[0] == name]
            if not mine:
                return None
            # Lower each window's maximum just below its runner-up: the
            # forward changes by less than the gap, and the window's
            # gradient goes to the runner-up, as the other rounding would.
            x = x.clone()
            with torch.no_grad():
                for _, first, second, _ in mine:
                    x[first] = x[second] - abs(float(x[second])) * 1e-7
            return (x,)
        return hook


def relu_ties(x):
    """ReLU inputs nonzero but within RELU_TIE_GAP of zero, relative to
    the largest input: (index, None, |x| / max |x|, whether it passed)."""
    xs = x.double()
    scale = float(xs.abs().max()) if xs.numel() else 0.0
    if scale == 0:
        return []
    gap = xs.abs() / scale
    return [(tuple(i), None, float(gap[tuple(i)]), float(xs[tuple(i)]) > 0)
            for i in ((gap < RELU_TIE_GAP) & (xs != 0)).nonzero().tolist()]


def near_ties(x, pool):
    """Windows whose two largest inputs differ by less than TIE_GAP,
    relative: (index of the largest, index of the runner-up, gap)."""
    pair = lambda v: (v, v) if isinstance(v, int) else tuple(v)
    k, s, p = pair(pool.kernel_size), pair(pool.stride or pool.kernel_size), pair(pool.padding)
    if pair(pool.dilation) != (1, 1):
        raise SystemExit("near_ties: dilated max-pool not supported")
    xs = x.double()
    n, c, h, w = xs.shape
    # Windows as the pool cuts them: its own output size, the input padded
    # with -inf (also where ceil_mode lets the last window hang over).
    oh, ow = torch.nn.functional.max_pool2d(x, k, s, p, 1, pool.ceil_mode).shape[2:]
    pad = (p[1], max(0, (ow - 1) * s[1] + k[1] - w - p[1]), p[0], max(0, (oh - 1) * s[0] + k[0] - h - p[0]))
    padded = torch.nn.functional.pad(xs, pad, value=-float("inf"))
    win = padded.unfold(2, k[0], s[0]).unfold(3, k[1], s[1])[:, :, :oh, :ow]
    top2, arg2 = win.reshape(n, c, oh, ow, -1).topk(2, dim=-1)
    gap = (top2[..., 0] - top2[..., 1]) / top2[..., 0].abs().clamp_min(1e-30)
    out = []
    # A window whose largest input is exactly 0 follows a ReLU (every
    # max-pool of these networks does): its gradient dies there whichever
    # input receives it.
    for b, ch, i, j in ((gap < TIE_GAP) & (top2[..., 0] != 0)).nonzero().tolist():
        def pos(a):
            a = int(a)
            return (b, ch, i * s[0] + a // k[1] - p[0], j * s[1] + a % k[1] - p[1])
        out.append((pos(arg2[b, ch, i, j, 0]), pos(arg2[b, ch, i, j, 1]), float(gap[b, ch, i, j])))
    return out


def compare(data, logits, loss, grads, zero, largest):
    """Rows (name, error) of pipecast's step against a torch step."""
    rows = [("logits", rel_error(data["logits"], logits)), ("loss", rel_error(data["loss"], loss))]
    for pname, g in grads.items():
        key = "grad." + pname
        if key not in data.files:
            rows.append((key, float("inf")))
            continue
        rows.append((key, rel_error(data[key], g, largest if pname in zero else 0.0)))
    return rows


def run(cmd):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def check_model(name, image, args, workdir):
    _, ctor = MODELS[name]
    path = os.path.join(workdir, "%s_%d.npz" % (name, image))
    if not (args.reuse and os.path.exists(path)):
        r = run(args.pipecast + ["models", "export", "--model", name, "--image", str(image),
                                 "--batch", "2", "--seed", "1", "--out", path])
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            print("FAIL %s: export exited %d" % (name, r.returncode))
            return False, {}

    problems, identical, entries = check_format(path)
    for p in problems:
        print("FAIL format: " + p)
    print("format: %d entries, %d problems; %d byte-identical to numpy.save" % (entries, len(problems), identical))
    ok = not problems

    data = np.load(path)
    step = TorchStep(ctor, data)
    logits, loss, grads, ties = step.run(find_ties=True)
    zero = biases_before_batchnorm(step.model)
    largest = max(float(np.abs(g).max()) for g in grads.values())
    rows = compare(data, logits, loss, grads, zero, largest)
    flips = ()
    windows = sorted((t for t in ties if t[2] is not None), key=lambda t: t[3])
    inputs = sorted((t for t in ties if t[2] is None), key=lambda t: t[3])
    best = max(e for _, e in rows)
    if windows:
        print("max-pool near-ties: %d windows%s" % (len(windows), "" if len(windows) <= MAX_TIES else
              ", more than the %d whose routings are tried" % MAX_TIES))
        for t in windows:
            print("  %s window at %s / %s, gap %.2g" % (t[0], t[1], t[2], t[3]))
        for k in range(1, min(len(windows), MAX_TIES) + 1):
            for combo in itertools.combinations(windows[:MAX_TIES], k):
                lg, ls, gr, _ = step.run(flips=combo)
                alt = compare(data, lg, ls, gr, zero, largest)
                if max(e for _, e in alt) < best:
                    best, rows, flips, logits, loss, grads = max(e for _, e in alt), alt, combo, lg, ls, gr
    if inputs:
        # ReLU ties sit apart from each other, each deciding its own
        # batch norm's gradients: each is tried on its own, on top of the
        # routings kept so far, nearest first, until a pass keeps none.
        print("ReLU near-ties: %d inputs%s" % (len(inputs), "" if len(inputs) <= MAX_TIES else
              ", more than the %d nearest whose routings are tried" % MAX_TIES))
        for t in inputs[:MAX_TIES]:
            print("  %s input at %s, |x| / max %.2g" % (t[0], t[1], t[3]))
        changed = True
        while changed:
            changed = False
            for t in inputs[:MAX_TIES]:
                if t in flips:
                    continue
                lg, ls, gr, _ = step.run(flips=flips + (t,))
                alt = compare(data, lg, ls, gr, zero, largest)
                if max(e for _, e in alt) < best:
                    best, rows, flips, logits, loss, grads = max(e for _, e in alt), alt, flips + (t,), lg, ls, gr
                    changed = True
    if ties:
        print("  routing matched: %s" % (", ".join("%s %s" % (f[0], f[1] if f[2] is None else f[2]) for f in flips)
                                         or "torch's own"))

    # Exact arithmetic, nearly: the same step in float64, with the same
    # routings. Both float32 steps are compared with it.
    lg64, ls64, gr64, _ = step.run(flips=flips, dtype=torch.float64)
    ours = {"logits": data["logits"], "loss": data["loss"], **{k: data["grad." + k] for k in grads}}
    theirs = {"logits": logits, "loss": loss, **grads}
    exact = {"logits": lg64, "loss": ls64, **gr64}
    key = lambda k: k if k in ("logits", "loss") else "grad." + k
    floor64 = max(float(np.abs(g).max()) for g in gr64.values())
    acc = {key(k): rel_error(ours[k], exact[k], floor64 if k in zero else 0.0) for k in exact}
    noise = {key(k): rel_error(theirs[k], exact[k], floor64 if k in zero else 0.0) for k in exact}
    gnames = [n for n, _ in rows if n.startswith("grad.")]
    err = dict(rows)
    noise_max = max(noise[n] for n in gnames)
    noise_median = float(np.median([noise[n] for n in gnames]))
    acc_median = float(np.median([acc[n] for n in gnames]))
    median_ok = acc_median <= max(GRAD_BOUND, NOISE_FACTOR * noise_median)

    width = max(len(n) for n in err) + len(" (floor)")
    print("%-*s  %10s  %8s  %10s  %10s  %s" % (width, "tensor", "error", "bound", "ours-f64", "torch-f64", "ok"))
    verdicts = {}
    for n, e in rows:
        bound = LOGITS_BOUND if n == "logits" else LOSS_BOUND if n == "loss" else GRAD_BOUND
        allowed = NOISE_FACTOR * (noise_max if n.startswith("grad.") else noise[n])
        verdict = "ok" if e <= bound else "noise" if acc[n] <= max(bound, allowed) and median_ok else "FAIL"
        verdicts[n] = verdict
        label = n + (" (floor)" if n[5:] in zero else "")
        if args.verbose or verdict != "ok" or n in ("logits", "loss"):
            print("%-*s  %10.3g  %8.0e  %10.3g  %10.3g  %s" % (width, label, e, bound, acc[n], noise[n], verdict))
    worst = max(gnames, key=lambda n: err[n])
    fails = sum(1 for n in gnames if verdicts[n] == "FAIL")
    within = sum(1 for n in gnames if err[n] <= GRAD_BOUND)
    print("%d gradients: %d within the bound, %d within float32's noise, %d FAIL; worst %s %.3g"
          % (len(gnames), within, len(gnames) - within - fails, fails, worst, err[worst]))
    print("against float64: median gradient error ours %.3g, torch's %.3g; largest ours %.3g, torch's %.3g: %s"
          % (acc_median, noise_median, max(acc[n] for n in gnames), noise_max, "ok" if median_ok else "FAIL"))
    ok = ok and "FAIL" not in verdicts.values() and median_ok
    summary = {"logits": err["logits"], "loss": err["loss"], "worst_grad": err[worst], "worst_grad_name": worst,
               "median_grad": float(np.median([err[n] for n in gnames])), "acc_median": acc_median,
               "noise_median": noise_median, "noise_max": noise_max}

    # The way back: torchvision's own state_dict, saved by numpy.
    back = os.path.join(workdir, "%s_torchvision.npz" % name)
    torch.manual_seed(1)
    sd = ctor().state_dict()
    np.savez(back, **{k: v.numpy() for k, v in sd.items()})
    r = run(args.pipecast + ["models", "import", "--model", name, "--image", str(image), "--output", "json", back])
    sys.stderr.write(r.stderr)
    loaded = json.loads(r.stdout).get("loaded") if r.returncode == 0 else None
    back_ok = r.returncode == 0 and loaded == len(sd)
    print("import of torchvision's state_dict: exit %d, %s of %d tensors loaded: %s"
          % (r.returncode, loaded, len(sd), "ok" if back_ok else "FAIL"))
    ok = ok and back_ok
    if not args.keep:
        os.remove(back)
        if not args.reuse:
            os.remove(path)
    return ok, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated models to check (default: %(default)s)")
    ap.add_argument("--image", action="append", default=[], metavar="MODEL=SIZE",
                    help="input size of a model, e.g. inceptionv3=96 (repeatable)")
    ap.add_argument("--pipecast", default="go run ./cmd/pipecast",
                    help="command that runs pipecast (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    ap.add_argument("--workdir", default=None, help="directory for the .npz files (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the .npz files")
    ap.add_argument("--reuse", action="store_true",
                    help="use an existing export in --workdir instead of running pipecast export")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every gradient's row")
    args = ap.parse_args()
    args.pipecast = shlex.split(args.pipecast)
    images = {name: size for name, (size, _) in MODELS.items()}
    for spec in args.image:
        name, _, size = spec.partition("=")
        if name not in MODELS or not size.isdigit():
            ap.error("--image %r: want MODEL=SIZE with MODEL one of %s" % (spec, ", ".join(MODELS)))
        images[name] = int(size)
    workdir = args.workdir or tempfile.mkdtemp(prefix="pipecast-check-")
    os.makedirs(workdir, exist_ok=True)
    print("torch %s, torchvision %s, numpy %s" % (torch.__version__, torchvision.__version__, np.__version__))
    torch.set_num_threads(args.threads)

    results, all_ok = {}, True
    for name in args.models.split(","):
        if name not in MODELS:
            ap.error("unknown model %r (have %s)" % (name, ", ".join(MODELS)))
        print("\n== %s (image %d, batch 2, seed 1)" % (name, images[name]))
        ok, summary = check_model(name, images[name], args, workdir)
        results[name] = summary
        all_ok = all_ok and ok
        print("%s: %s" % (name, "PASS" if ok else "FAIL"))

    print("\nerrors against torch float32 (logits, loss, gradients: median and worst), and the median")
    print("gradient errors of pipecast and of torch float32 against torch float64:")
    print("%-12s %-10s %-10s %-10s %-26s %-10s %s" % ("model", "logits", "loss", "grad med", "worst gradient", "ours-f64", "torch-f64"))
    for name, s in results.items():
        if s:
            print("%-12s %-10.3g %-10.3g %-10.3g %-26s %-10.3g %.3g" % (
                name, s["logits"], s["loss"], s["median_grad"], "%.3g %s" % (s["worst_grad"], s["worst_grad_name"][5:]),
                s["acc_median"], s["noise_median"]))
    print("PASS" if all_ok else "FAIL")
    if not args.workdir and not args.keep:
        try:
            os.rmdir(workdir)
        except OSError:
            pass
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

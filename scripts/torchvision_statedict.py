#!/usr/bin/python3
"""Write torchvision's state_dict names and shapes as golden files.

For each network pipecast builds as torchvision does, this writes
models/testdata/statedict_<model>.txt: a header comment naming the
torchvision and torch versions, then one line per state_dict entry, in
state_dict order, "name shape" with the shape as a list: [64, 3, 3, 3],
or [] for a 0-d tensor (num_batches_tracked). The zoo suite (models/modeltest)
compares pipecast's StateDict of each model with these files line for
line.

Run from the repository root:

    /usr/bin/python3 scripts/torchvision_statedict.py [--out models/testdata]
"""

import argparse
import os

import torch
import torchvision

# The networks as pipecast's zoo builds them: torchvision's constructors
# with their default 1000 classes, untrained; Inception-v3 without its
# auxiliary classifier and without the input transform.
MODELS = {
    "vgg16bn": lambda: torchvision.models.vgg16_bn(),
    "resnet50": lambda: torchvision.models.resnet50(),
    "inceptionv3": lambda: torchvision.models.inception_v3(
        aux_logits=False, transform_input=False, init_weights=True),
}


def lines(model):
    """Returns one "name shape" line per state_dict entry."""
    out = []
    for name, t in model.state_dict().items():
        out.append("%s [%s]" % (name, ", ".join(str(d) for d in t.shape)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join("models", "testdata"),
                    help="directory to write statedict_<model>.txt into")
    ap.add_argument("models", nargs="*", default=sorted(MODELS),
                    help="models to write (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        # Initialisation draws do not change names or shapes, but a fixed
        # seed keeps the run reproducible in every other respect.
        torch.manual_seed(0)
        model = MODELS[name]()
        path = os.path.join(args.out, "statedict_%s.txt" % name)
        with open(path, "w") as f:
            f.write("# state_dict of torchvision %s (torch %s) %s: name shape, in state_dict order\n"
                    % (torchvision.__version__, torch.__version__, name))
            f.write("# written by scripts/torchvision_statedict.py\n")
            for line in lines(model):
                f.write(line + "\n")
        print("wrote %s (%d entries)" % (path, len(model.state_dict())))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Write Hugging Face's state_dict names and shapes of the zoo's transformers as golden files.

For each decoder transformer of pipecast's zoo this writes
models/testdata/statedict_<model>.txt in the format of
scripts/torchvision_statedict.py's files: header comments, then one
"name shape" line per state_dict entry, in state_dict order. The zoo suite
(models/modeltest) compares pipecast's StateDict of each model with these
files line for line.

The lines are written from the definitions of the transformers library's
GPT2LMHeadModel and LlamaForCausalLM (their modules' order, their
parameters' names and shapes) and from each model's config.json, as
shared/REFERENCES.md records them, with no transformers package (Debian
has none). Three departures from model.state_dict(), each said in the
file's header:

- GPT-2's Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc,
  mlp.c_proj) are stored [in, out] by Hugging Face and [out, in] by
  pipecast, whose layers are nn.Linear: the files give pipecast's layout
  (an export transposes them);
- GPT-2's lm_head.weight is tied to transformer.wte.weight and listed
  once, under transformer.wte.weight, as safetensors files keep it;
- the attention's causal-mask buffers (GPT-2's attn.bias and
  attn.masked_bias, Llama's rotary inv_freq) are constants, not weights,
  and not persistent in current releases: pipecast has none.

Run from the repository root:

    python3 scripts/hf_statedict.py [--out models/testdata] [model ...]
"""

import argparse
import os

# config.json of each model: GPT-2's n_layer, n_embd, n_head,
# n_positions, vocab_size; Llama's num_hidden_layers, hidden_size,
# intermediate_size, num_attention_heads, num_key_value_heads,
# vocab_size.
GPT2 = {
    "gpt2": dict(n_layer=12, n_embd=768, n_head=12),
    "gpt2-medium": dict(n_layer=24, n_embd=1024, n_head=16),
    "gpt2-large": dict(n_layer=36, n_embd=1280, n_head=20),
    "gpt2-xl": dict(n_layer=48, n_embd=1600, n_head=25),
}
for c in GPT2.values():
    c.update(n_positions=1024, vocab_size=50257)

LLAMA = {
    "tinyllama-1.1b": dict(num_hidden_layers=22, hidden_size=2048, intermediate_size=5632,
                           num_attention_heads=32, num_key_value_heads=4, vocab_size=32000),
    "llama2-7b": dict(num_hidden_layers=32, hidden_size=4096, intermediate_size=11008,
                      num_attention_heads=32, num_key_value_heads=32, vocab_size=32000),
}


def linear(name, n_in, n_out, bias):
    """An nn.Linear's entries, weight [out, in], or a Conv1D's in
    pipecast's layout."""
    out = [(name + ".weight", [n_out, n_in])]
    if bias:
        out.append((name + ".bias", [n_out]))
    return out


def gpt2(c):
    """GPT2LMHeadModel's entries: transformer (wte, wpe, h.N, ln_f), lm_head
    (tied to wte: not listed)."""
    d, inner = c["n_embd"], 4 * c["n_embd"]  # n_inner None: 4·n_embd
    out = [("transformer.wte.weight", [c["vocab_size"], d]),
           ("transformer.wpe.weight", [c["n_positions"], d])]
    for i in range(c["n_layer"]):
        h = "transformer.h.%d." % i
        # GPT2Block: ln_1, attn (c_attn, c_proj), ln_2, mlp (c_fc, c_proj).
        out += [(h + "ln_1.weight", [d]), (h + "ln_1.bias", [d])]
        out += linear(h + "attn.c_attn", d, 3 * d, True)
        out += linear(h + "attn.c_proj", d, d, True)
        out += [(h + "ln_2.weight", [d]), (h + "ln_2.bias", [d])]
        out += linear(h + "mlp.c_fc", d, inner, True)
        out += linear(h + "mlp.c_proj", inner, d, True)
    out += [("transformer.ln_f.weight", [d]), ("transformer.ln_f.bias", [d])]
    return out


def llama(c):
    """LlamaForCausalLM's entries: model (embed_tokens, layers.N, norm),
    lm_head (untied)."""
    d, inter = c["hidden_size"], c["intermediate_size"]
    head_dim = d // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * head_dim, c["num_key_value_heads"] * head_dim
    out = [("model.embed_tokens.weight", [c["vocab_size"], d])]
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        # LlamaDecoderLayer: self_attn, mlp, input_layernorm,
        # post_attention_layernorm; no biases (attention_bias and
        # mlp_bias false).
        out += linear(p + "self_attn.q_proj", d, q, False)
        out += linear(p + "self_attn.k_proj", d, kv, False)
        out += linear(p + "self_attn.v_proj", d, kv, False)
        out += linear(p + "self_attn.o_proj", q, d, False)
        out += linear(p + "mlp.gate_proj", d, inter, False)
        out += linear(p + "mlp.up_proj", d, inter, False)
        out += linear(p + "mlp.down_proj", inter, d, False)
        out += [(p + "input_layernorm.weight", [d]), (p + "post_attention_layernorm.weight", [d])]
    out += [("model.norm.weight", [d])]
    out += linear("lm_head", d, c["vocab_size"], False)
    return out


def header(name):
    """The file's comments."""
    lines = []
    if name in GPT2:
        c = GPT2[name]
        lines.append("state_dict of Hugging Face's GPT2LMHeadModel, %s (n_layer %d, n_embd %d, n_head %d, "
                     "n_positions %d, vocab_size %d): name shape, in state_dict order"
                     % (name, c["n_layer"], c["n_embd"], c["n_head"], c["n_positions"], c["vocab_size"]))
        lines.append("Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) in pipecast's nn.Linear "
                     "layout [out, in]; Hugging Face stores them [in, out]")
        lines.append("lm_head.weight is tied to transformer.wte.weight: listed once, under that name, "
                     "as safetensors files keep it")
        lines.append("not listed: the causal-mask buffers attn.bias and attn.masked_bias (constants, "
                     "not persistent in current releases)")
    else:
        c = LLAMA[name]
        lines.append("state_dict of Hugging Face's LlamaForCausalLM, %s (num_hidden_layers %d, hidden_size %d, "
                     "intermediate_size %d, num_attention_heads %d, num_key_value_heads %d, vocab_size %d, "
                     "tie_word_embeddings false): name shape, in state_dict order"
                     % (name, c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"],
                        c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"]))
        lines.append("not listed: the rotary embedding's inv_freq buffer (a constant, not persistent)")
    lines.append("written by scripts/hf_statedict.py from the definitions, without the transformers package")
    return ["# " + l for l in lines]


def entries(name):
    """The model's "name shape" lines."""
    rows = gpt2(GPT2[name]) if name in GPT2 else llama(LLAMA[name])
    return ["%s [%s]" % (n, ", ".join(str(d) for d in shape)) for n, shape in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join("models", "testdata"),
                    help="directory to write statedict_<model>.txt into")
    ap.add_argument("models", nargs="*", default=sorted(list(GPT2) + list(LLAMA)),
                    help="models to write (default: all)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models:
        path = os.path.join(args.out, "statedict_%s.txt" % name)
        with open(path, "w") as f:
            f.write("\n".join(header(name) + entries(name)) + "\n")
        print(path)


if __name__ == "__main__":
    main()

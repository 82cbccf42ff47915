// Package models owns pipecast's layers and networks: the Layer interface
// (an explicit Forward, in training or evaluation mode, and a Backward that
// consumes the context its Forward saved — no general autograd), one layer
// per file, the containers that compose them (Sequential, Concat, Residual:
// a block is a layer made of layers), and parameter naming that follows
// torch's state_dict.
//
// It also owns the model zoo — the CNNs (mlp, vgg16, vgg16bn, resnet50,
// inceptionv3) and the decoder transformers (gpt2, gpt2-medium,
// gpt2-large, gpt2-xl, tinyllama-1.1b, llama2-7b: embeddings, LayerNorm
// and RMSNorm, causal self-attention with grouped-query attention and
// rotary positions, GELU and SwiGLU MLPs, pre-norm decoder layers, LM
// heads, GPT-2's embedding tied to its head: a Tie) — their cost
// annotations, the partitioner and weight import and export; each zoo
// model passes the shared suite of models/modeltest.
//
// # Families own their sizes, optimizers own their state
//
// A model family's size is Config, with its defaults, checks
// (Arch.CheckSize), label (SizeRecord.Label) and record form
// (SizeRecord, which run records and the predictor's keys embed whole):
// a new size field is added here alone. Optimizers implement Optimizer,
// are chosen by name (NewOptimizer, OptimizerNames), keep their
// per-parameter state in Param.State, in the Optimizer memory category,
// and their hyper-parameters in Hyper, whose record form
// (OptimizerRecord, which run records embed whole) names them as torch
// does.
//
// # Dependencies
//
// models depends on package tensor alone (and npyio for .npz files): it
// runs on any tensor.Device and imports no backend. Describe, and Build,
// which takes its costs from Describe, measure a model on a device of the
// meta backend, opened by name through the tensor registry and read
// through tensor.MACCounter; a program that describes or builds models
// must therefore link that backend itself, with
//
//	import _ "github.com/pipecast/pipecast/tensor/meta"
//
// and Describe fails, naming that import, when it is missing.
//
// # Ownership of tensors
//
// Forward borrows x and returns y with one reference that the caller owns.
// The context it returns holds its own references to what Backward needs,
// and Backward releases them. Backward borrows dy and returns dx, owned by
// the caller. Activations therefore live exactly as long as something needs
// them, and a device's memory accounting shows a schedule's real footprint.
// BackwardInput splits a backward in two for zero-bubble schedules: it
// returns dx at once and a WeightGrad, holding its own references to the
// inputs and output gradients it needs, that accumulates the parameter
// gradients when it runs.
package models

// Package modeltest is the test suite every network of the model zoo
// must pass, and the checks it is built from. A model's tests describe
// it in a Case — its zoo name, a small configuration to run at, and the
// facts that are its own: the reference library's parameter count,
// state_dict names, initialisation rules (torchvision's for the CNNs,
// Hugging Face's for the transformers) — and call Run, which checks
//
//   - the structure Describe reports, at the reference configuration and
//     at the small one: blocks whose shapes chain, positive costs that
//     add up (a tied parameter once), and the classes — a language
//     model's vocabulary — changing the head alone;
//   - the state_dict: names unique, in torch's order, and the reference
//     library's (golden files in models/testdata);
//   - the initialisation, against the distributions the reference
//     library draws from;
//   - a training step on the CPU backend against the float64 reference
//     (a mirror of the layer tree composed from package
//     tensor/reference): logits, loss, running statistics, and every
//     gradient;
//   - the gradients of the whole network against the reference, and the
//     reference against central differences;
//   - a round trip of the state_dict through an .npz archive in the
//     field's format (models.WriteStateDict, models.Import) into a fresh
//     model.
//
// A language model (its Arch has Tokens) runs the same checks on its
// own terms (tokens.go): token ids below its vocabulary as input, no
// input gradient, a label at every position, logits [B, S, Vocab] and
// the loss their mean over the B·S positions; Full and the sizes checked
// take its sequence length, vocabulary and layers where a CNN's take
// its image and classes.
//
// CheckLayer, the check the gradient subtest runs on a whole network, is
// also how single layers and blocks are tested; CheckTokenLayer is its
// form for layers whose input is token ids (embeddings, a decoder's
// input block), which have no input gradient. The mirrors of the decoder
// transformers' layers (ref_transformer.go, ref_attention.go) write
// their float64 arithmetic out themselves rather than call
// tensor/reference, whose transformer functions are the kernels' own
// references: a misreading of Hugging Face's definitions shared by a
// kernel and its reference still shows. Tolerances are named constants
// with a comment saying where they come from (tolerance.go).
//
// The package imports models, so tests that use it are in package
// models_test.
package modeltest

// Package modeltest is the test suite every network of the model zoo
// must pass, and the checks it is built from. A model's tests describe
// it in a Case — its zoo name, a small configuration to run at, and the
// facts that are its own: torchvision's parameter count, state_dict
// names, initialisation rules — and call Run, which checks
//
//   - the structure Describe reports, at torchvision's configuration and
//     at the small one: blocks whose shapes chain, positive costs that
//     add up, and the classes changing the head alone;
//   - the state_dict: names unique, in torch's order, and torchvision's;
//   - the initialisation, against the distributions torchvision draws
//     from;
//   - a training step on the CPU backend against the float64 reference
//     (a mirror of the layer tree composed from package
//     tensor/reference): logits, loss, running statistics, and every
//     gradient;
//   - the gradients of the whole network against the reference, and the
//     reference against central differences;
//   - a round trip of the state_dict through an .npz archive into a
//     fresh model.
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

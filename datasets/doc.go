// Package datasets owns the input pipelines that feed training: synthetic
// data, CIFAR-10 in its binary format and MNIST in its IDX format for
// models of images and vectors; synthetic token sequences and any file's
// bytes as byte-level tokens for language models, with a label at every
// position.
package datasets

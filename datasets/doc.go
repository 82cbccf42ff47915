// Package datasets owns the input pipelines that feed training: synthetic
// data, CIFAR-10 in its binary format and MNIST in its IDX format.
package datasets

// Package models owns pipecast's layers and networks: the Layer interface
// (an explicit Forward, in training or evaluation mode, and a Backward that
// consumes the context its Forward saved — no general autograd), one layer
// per file, the containers that compose them (Sequential, Concat, Residual:
// a block is a layer made of layers), and parameter naming that follows
// torch's state_dict.
//
// Later it also owns the model zoo (mlp, vgg16bn, resnet50, inceptionv3),
// their cost annotations, the partitioner and weight import and export.
//
// # Ownership of tensors
//
// Forward borrows x and returns y with one reference that the caller owns.
// The context it returns holds its own references to what Backward needs,
// and Backward releases them. Backward borrows dy and returns dx, owned by
// the caller. Activations therefore live exactly as long as something needs
// them, and a device's memory accounting shows a schedule's real footprint.
package models

// Package comm owns the transport between devices: send and receive,
// all-gather and all-to-all, in-process by default. Every transfer is an
// explicit copy into the receiving device's memory, timed and counted in
// bytes, never hidden.
//
// # The contract
//
// An Endpoint is one rank's side. Send posts a tensor and returns at once;
// Recv waits for the tensor that a given rank sent under a given Tag and
// copies it into a destination the receiver allocated on its own device,
// so the bytes show up in the receiver's memory accounting under the
// destination's category (usually tensor.Comm). Messages are matched by
// (sender, tag), never by arrival order; two messages with equal sender
// and tag are received in the order they were sent. The sender's tensor
// is retained until it has been copied out, so the sender may release it
// right after Send but must not write into it.
//
// AllGather and AllToAll are collectives: every rank calls them, in the
// same order, with the same tag. The n-th collective call of every rank is
// one collective, as on an MPI communicator; a rank whose call differs in
// kind, tag, or in which pieces it sends where another rank expects them,
// gets an error wrapping ErrMismatch instead of waiting. Each rank copies
// the pieces it receives into its own destinations and returns when they
// are copied and every other rank has entered the collective; it does not
// wait for the others to copy its own pieces.
//
// Every waiting call ends when its context is done, returning the
// context's error wrapped with what it was waiting for, e.g.
// "recv from 2, step 3 gradient stage 2 micro 1: context canceled".
//
// # In-process transport
//
// InProcess (NewInProcess, or NewInProcessTransport to keep the handle
// that closes it) connects the ranks of one process, each driving one
// tensor.Device of any backend. A post hands a retained reference to the
// receiver's mailbox; the receiving rank does the copy with
// dst.Device().CopyFrom and releases the reference. Sent and received
// bytes are counted at that copy, so over any set of ranks the bytes sent
// equal the bytes received. Close ends every wait and releases what was
// never received.
//
// # Processes: Group and World
//
// A multi-process run needs more of its transport than transfers: a
// Group adds barriers, gathering and broadcasting bytes and small control
// messages, and a World (every process of a job) splits off the group of
// a run's first K ranks. NewInProcessGroups gives goroutines Groups over
// one in-process transport, so that the multi-process code path runs and
// is tested without MPI; package runner/comm/mpi (build tag mpi) is the
// Open MPI transport, one process per device, and its package doc says
// how it maps tags, polls and counts. Package commtest is the one suite
// every transport passes.
package comm

// Package mpi is the multi-process transport: one process per device,
// started by mpirun, each driving its device through a comm.Group whose
// transfers go through the MPI library. It implements comm.Endpoint with
// the in-process transport's semantics, which the shared suite
// runner/comm/commtest checks on both.
//
// The package needs the mpi build tag and Open MPI's development files
// (Debian: libopenmpi-dev; cgo finds them with pkg-config ompi-c). The
// default build has only Init, which returns ErrNotBuilt, and never links
// the library:
//
//	go build -tags mpi ./cmd/pipecast
//	mpirun -np 4 ./pipecast profile --transport mpi …
//
// # The world and its groups
//
// Init initialises the library asking for MPI_THREAD_MULTIPLE (goroutines
// move between threads, so less than MPI_THREAD_SERIALIZED is refused, and
// at MPI_THREAD_SERIALIZED every call holds one mutex) and returns the
// comm.World. Every communicator gets MPI_ERRORS_RETURN: a failed call
// returns an *Error carrying MPI_Error_string's text and never aborts the
// process. A group (the world, or one that Split returns) works on two
// duplicates of its communicator: one for tensor transfers and AllGather
// and AllToAll, one for control messages (SendBytes, RecvBytes) and the
// group's Barrier, Gather and Broadcast, so that control tags never match
// tensor tags.
//
// # Tags
//
// MPI matches a message by source, communicator and an integer tag in
// [0, MPI_TAG_UB]. A comm.Tag becomes one by hashing all four of its
// fields with 64-bit FNV-1a (Step, the length of Kind, Kind, Stage and
// Micro, the ints as zig-zag varints), folding the upper half onto the
// lower and reducing modulo MPI_TAG_UB+1 (2³¹ with Open MPI). Steps grow
// without bound and calibration puts byte counts into Micro, so no
// packing of the fields into 31 bits would do. Two given tags collide
// with probability 2⁻³¹; a collision matters only between two messages
// from one rank to another that are in flight at once and received in
// another order than sent, and then the element count check
// (MPI_Get_count) catches it unless the sizes agree.
//
// # Point-to-point transfers
//
// Send starts MPI_Isend straight from the tensor's memory (a CPU tensor's
// []float32, pinned with runtime.Pinner; the tensor retained) and
// returns. Every later call of the group first tests what is pending,
// releasing the tensors of sends that completed; the group's Flush
// method (reached with an interface{ Flush(context.Context) error }
// assertion) waits for them.
// Recv waits for the message with MPI_Improbe, checks its element count
// with MPI_Get_count (comm.ErrMismatch on a difference, the message
// received into scratch memory all the same, as the in-process transport
// drops it), and receives it with MPI_Imrecv into the destination's
// memory, pinned. A tensor whose storage is not host memory (another
// backend) is staged through a host buffer with Download and Upload.
//
// # Waiting
//
// MPI cannot wake a goroutine, so a waiting call polls (MPI_Improbe,
// MPI_Iprobe, MPI_Testall). For the first 2 ms of a wait it looks in a
// tight loop, yielding the processor (runtime.Gosched) every 16 looks;
// then it sleeps between looks, from 20 µs doubling to 500 µs. A
// message that arrives within the first 2 ms, as in a pipeline's steady
// state, is seen within a look's time; a rank waiting seconds for a
// slow peer uses about 2 % of a core; a cancelled context ends the wait
// within the current sleep, returning the context's error wrapped.
//
// # Collectives
//
// AllGather and AllToAll first send every rank's header to every rank
// with MPI_Iallgather: which collective it called, its tag, whether its
// own arguments were wrong, and how many elements it sends each rank and
// expects from each. From the headers every rank works out alike which
// pieces move (the calls match, and as many elements are sent as
// expected) and reports, as the in-process transport does, why the
// others do not (comm.ErrMismatch). The data then move with
// MPI_Iallgatherv in place when every rank called AllGather and every
// piece moves, and with MPI_Ialltoallv otherwise; nil contributions and
// destinations are counts of 0. Both address every piece as a
// displacement from one base address, so the pieces stay in the tensors'
// own memory, pinned; pieces more than 2³¹ elements apart, or not in host
// memory, are staged. Bytes are counted as the in-process transport
// counts them: what a rank receives from others, its own part in an
// all-to-all copied locally and not counted.
//
// A group also sums a tensor over its ranks (comm.Reducer: AllReduceSum,
// MPI_Iallreduce in place, queued with the other collectives but without
// their headers, so its callers must call it alike) and splits into
// groups by colour (comm.Splitter: SplitBy, MPI_Comm_split after a
// barrier). Data-parallel replicas get a group of their own per pipeline
// device that way and sum their gradients with the library's algorithm.
//
// # Differences from the in-process transport
//
// A sent tensor's bytes count in SentBytes when Send starts it, not when
// the receiver copies it, so that the Stats a step reads after its final
// barrier hold all of its sends; after every message has been received
// the totals agree with the in-process transport's. A call that its
// context cancels while MPI already works on it (a matched receive, a
// started collective) is finished by later calls of the group, which
// keep its memory pinned and its tensors until then: a collective whose
// peers join late still completes for them. Close waits a second for
// pending transfers and reports those that never completed; their memory
// stays pinned, since the library may still use it.
//
// # Tests
//
// go test -tags mpi ./runner/comm/mpi runs the test binary again under
// mpirun --allow-run-as-root --oversubscribe with 2 and 3 processes, each
// running the transport suite and the group tests as one rank, and skips
// when mpirun is not on PATH.
package mpi

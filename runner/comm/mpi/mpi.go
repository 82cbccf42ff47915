//go:build mpi

package mpi

// This file and shim.h, its C side, are the whole cgo boundary to the MPI
// library: every other file of the package calls these wrappers with Go
// types. Handles stay in
// unexported types, counts and ranks cross as Go ints, and a return code
// other than MPI_SUCCESS becomes an *Error carrying MPI_Error_string's
// text. Buffers are unsafe.Pointers to memory that the caller has pinned
// (runtime.Pinner) for as long as the request using it is pending; count
// and displacement arrays are Go []int32, pinned likewise.

/*
#cgo pkg-config: ompi-c
#cgo noescape pc_iprobe
#cgo noescape pc_improbe
#cgo noescape pc_testall
#cgo nocallback pc_iprobe
#cgo nocallback pc_improbe
#cgo nocallback pc_testall
#cgo nocallback pc_isend
#cgo nocallback pc_imrecv
#include "shim.h"
*/
import "C"

import (
	"strings"
	"sync"
	"unsafe"
)

// dtype is the MPI datatype of a buffer's elements.
type dtype int

const (
	floats dtype = iota // MPI_FLOAT: tensor elements
	bytes               // MPI_BYTE: control messages and headers
	int64s              // MPI_INT64_T: sizes
)

func (t dtype) c() C.int { return C.int(t) }

// serialize is set when the library runs at MPI_THREAD_SERIALIZED: every
// call then holds libMu, since goroutines of one process (the world's
// and its groups') may call at once, from any thread.
var (
	serialize bool
	libMu     sync.Mutex
)

func lock() {
	if serialize {
		libMu.Lock()
	}
}

func unlock() {
	if serialize {
		libMu.Unlock()
	}
}

// check turns a return code into nil or an *Error.
func check(op string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return &Error{Op: op, Code: int(rc), Text: errorText(rc)}
}

// errorText returns MPI_Error_string's text for a code. It needs no
// lock: the standard lets it be called at any time, from any thread.
func errorText(rc C.int) string {
	var buf [C.MPI_MAX_ERROR_STRING]C.char
	var n C.int
	if C.MPI_Error_string(rc, &buf[0], &n) != C.MPI_SUCCESS {
		return "unknown MPI error"
	}
	return goString(buf[:], n)
}

// goString returns the string of the first n chars of buf, up to the
// first NUL: some libraries count the terminating NUL in n.
func goString(buf []C.char, n C.int) string {
	s := C.GoStringN(&buf[0], min(n, C.int(len(buf))))
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// Thread support levels, as MPI_Init_thread reports them.
const (
	threadSerialized = int(C.MPI_THREAD_SERIALIZED)
	threadMultiple   = int(C.MPI_THREAD_MULTIPLE)
)

// initThread initialises the library, asking for MPI_THREAD_MULTIPLE, and
// returns the level provided.
func initThread() (int, error) {
	var provided C.int
	if err := check("MPI_Init_thread", C.pc_init(&provided)); err != nil {
		return 0, err
	}
	return int(provided), nil
}

func finalize() error {
	lock()
	defer unlock()
	return check("MPI_Finalize", C.MPI_Finalize())
}

// tagUpperBound returns the MPI_TAG_UB attribute.
func tagUpperBound() (int, error) {
	var ub C.int
	lock()
	rc := C.pc_tag_ub(&ub)
	unlock()
	if err := check("MPI_Comm_get_attr(MPI_TAG_UB)", rc); err != nil {
		return 0, err
	}
	return int(ub), nil
}

// libraryVersion returns MPI_Get_library_version's string on one line.
func libraryVersion() (string, error) {
	var buf [C.MPI_MAX_LIBRARY_VERSION_STRING]C.char
	var n C.int
	lock()
	rc := C.MPI_Get_library_version(&buf[0], &n)
	unlock()
	if err := check("MPI_Get_library_version", rc); err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(goString(buf[:], n)), " "), nil
}

// processorName returns MPI_Get_processor_name's name.
func processorName() (string, error) {
	var buf [C.MPI_MAX_PROCESSOR_NAME]C.char
	var n C.int
	lock()
	rc := C.MPI_Get_processor_name(&buf[0], &n)
	unlock()
	if err := check("MPI_Get_processor_name", rc); err != nil {
		return "", err
	}
	return goString(buf[:], n), nil
}

// communicator is an MPI communicator handle.
type communicator struct{ h C.MPI_Comm }

func worldCommunicator() communicator { return communicator{C.pc_comm_world()} }

// rankSize returns the calling process's rank and the size.
func (c communicator) rankSize() (rank, size int, err error) {
	var r, s C.int
	lock()
	defer unlock()
	if err := check("MPI_Comm_rank", C.MPI_Comm_rank(c.h, &r)); err != nil {
		return 0, 0, err
	}
	if err := check("MPI_Comm_size", C.MPI_Comm_size(c.h, &s)); err != nil {
		return 0, 0, err
	}
	return int(r), int(s), nil
}

// errorsReturn makes errors on c return codes instead of aborting.
func (c communicator) errorsReturn() error {
	lock()
	defer unlock()
	return check("MPI_Comm_set_errhandler", C.pc_errors_return(c.h))
}

// dup duplicates c (collective over c).
func (c communicator) dup() (communicator, error) {
	var out communicator
	lock()
	defer unlock()
	if err := check("MPI_Comm_dup", C.MPI_Comm_dup(c.h, &out.h)); err != nil {
		return communicator{}, err
	}
	return out, nil
}

// split returns the communicator of the ranks calling with the same
// color ≥ 0; a negative color (MPI_UNDEFINED) returns ok false.
func (c communicator) split(color, key int) (out communicator, ok bool, err error) {
	lock()
	defer unlock()
	if err := check("MPI_Comm_split", C.pc_split(c.h, C.int(color), C.int(key), &out.h)); err != nil {
		return communicator{}, false, err
	}
	return out, C.pc_comm_is_null(out.h) == 0, nil
}

// free marks c for deallocation; pending operations on it still complete.
func (c *communicator) free() error {
	lock()
	defer unlock()
	return check("MPI_Comm_free", C.MPI_Comm_free(&c.h))
}

// requests are the MPI requests of one phase of an operation, which
// complete together. They live in an allocation of their own: cgo checks
// the whole Go object an argument points into, and an op holds Go
// pointers.
type requests struct{ r []C.MPI_Request }

// add makes room for one more request and returns where MPI writes it.
func (q *requests) add() *C.MPI_Request {
	q.r = append(q.r, nil)
	return &q.r[len(q.r)-1]
}

// drop forgets the request just added, whose call failed.
func (q *requests) drop() { q.r = q.r[:len(q.r)-1] }

// pending returns the number of requests of the phase.
func (q *requests) pending() int { return len(q.r) }

// testAll reports whether every request has completed, and empties q
// when they have.
func (q *requests) testAll() (bool, error) {
	if len(q.r) == 0 {
		return true, nil
	}
	var done C.int
	lock()
	rc := C.pc_testall(C.int(len(q.r)), &q.r[0], &done)
	unlock()
	if err := check("MPI_Testall", rc); err != nil {
		return false, err
	}
	if done == 0 {
		return false, nil
	}
	q.r = q.r[:0]
	return true, nil
}

// started keeps a call's request in q, or drops it if the call failed or
// its request has completed already (rc pc_done).
func (q *requests) started(op string, rc C.int, done bool) error {
	if rc == C.pc_done {
		rc, done = C.MPI_SUCCESS, true
	}
	err := check(op, rc)
	if err != nil || done {
		q.drop()
	}
	return err
}

// isend starts sending n elements of t at buf to rank to under tag; the
// request goes into q unless it completed at once.
func (c communicator) isend(q *requests, buf unsafe.Pointer, n int, t dtype, to, tag int) error {
	r := q.add()
	lock()
	rc := C.pc_isend(c.h, buf, C.int(n), t.c(), C.int(to), C.int(tag), r)
	unlock()
	return q.started("MPI_Isend", rc, false)
}

// iprobe reports whether a message from rank from under tag has arrived,
// and its count of t's elements, leaving it queued.
func (c communicator) iprobe(from, tag int, t dtype) (found bool, n int, err error) {
	var f, count C.int
	lock()
	rc := C.pc_iprobe(c.h, C.int(from), C.int(tag), t.c(), &f, &count)
	unlock()
	if err := check("MPI_Iprobe", rc); err != nil {
		return false, 0, err
	}
	return f != 0, int(count), nil
}

// message is a message that MPI_Improbe matched, to be received with
// imrecv and by nothing else.
type message struct{ h C.MPI_Message }

// improbe matches the next message from rank from under tag, if one has
// arrived, and returns its count of t's elements.
func (c communicator) improbe(from, tag int, t dtype) (m message, found bool, n int, err error) {
	var f, count C.int
	lock()
	rc := C.pc_improbe(c.h, C.int(from), C.int(tag), t.c(), &f, &m.h, &count)
	unlock()
	if err := check("MPI_Improbe", rc); err != nil {
		return message{}, false, 0, err
	}
	return m, f != 0, int(count), nil
}

// imrecv starts receiving m into buf, which holds n elements of t; the
// request goes into q unless it completed at once.
func (m *message) imrecv(q *requests, buf unsafe.Pointer, n int, t dtype) error {
	r := q.add()
	lock()
	rc := C.pc_imrecv(&m.h, buf, C.int(n), t.c(), r)
	unlock()
	return q.started("MPI_Imrecv", rc, false)
}

// cInts views a pinned []int32 as the int array MPI reads.
func cInts(s []int32) *C.int {
	if len(s) == 0 {
		return nil
	}
	return (*C.int)(unsafe.Pointer(&s[0]))
}

// iallgather gathers n bytes of every rank into recv, in rank order.
func (c communicator) iallgather(q *requests, send unsafe.Pointer, n int, recv unsafe.Pointer) error {
	r := q.add()
	lock()
	rc := C.pc_iallgather(c.h, send, C.int(n), recv, r)
	unlock()
	return q.started("MPI_Iallgather", rc, false)
}

// iallreduceSumInPlace sums n floats at buf over the ranks, in place
// on every rank.
func (c communicator) iallreduceSumInPlace(q *requests, buf unsafe.Pointer, n int) error {
	r := q.add()
	lock()
	rc := C.pc_iallreduce_sum_in_place(c.h, buf, C.int(n), r)
	unlock()
	return q.started("MPI_Iallreduce", rc, false)
}

// iallgathervInPlace gathers rank p's counts[p] elements, found at
// recv+displs[p] on rank p, into recv+displs[p] of every rank.
func (c communicator) iallgathervInPlace(q *requests, recv unsafe.Pointer, counts, displs []int32, t dtype) error {
	r := q.add()
	lock()
	rc := C.pc_iallgatherv_in_place(c.h, recv, cInts(counts), cInts(displs), t.c(), r)
	unlock()
	return q.started("MPI_Iallgatherv", rc, false)
}

// ialltoallv sends scounts[k] elements at send+sdispls[k] to rank k and
// receives rcounts[p] elements from rank p at recv+rdispls[p].
func (c communicator) ialltoallv(q *requests, send unsafe.Pointer, scounts, sdispls []int32, recv unsafe.Pointer, rcounts, rdispls []int32, t dtype) error {
	r := q.add()
	lock()
	rc := C.pc_ialltoallv(c.h, send, cInts(scounts), cInts(sdispls), recv, cInts(rcounts), cInts(rdispls), t.c(), r)
	unlock()
	return q.started("MPI_Ialltoallv", rc, false)
}

func (c communicator) ibarrier(q *requests) error {
	r := q.add()
	lock()
	rc := C.MPI_Ibarrier(c.h, r)
	unlock()
	return q.started("MPI_Ibarrier", rc, false)
}

// igather gathers n elements of t from every rank into root's recv.
func (c communicator) igather(q *requests, send unsafe.Pointer, n int, recv unsafe.Pointer, t dtype, root int) error {
	r := q.add()
	lock()
	rc := C.pc_igather(c.h, send, C.int(n), recv, t.c(), C.int(root), r)
	unlock()
	return q.started("MPI_Igather", rc, false)
}

// igatherv gathers n elements of t from every rank into root's recv at
// displs (counts and displs matter on root only).
func (c communicator) igatherv(q *requests, send unsafe.Pointer, n int, recv unsafe.Pointer, counts, displs []int32, t dtype, root int) error {
	r := q.add()
	lock()
	rc := C.pc_igatherv(c.h, send, C.int(n), recv, cInts(counts), cInts(displs), t.c(), C.int(root), r)
	unlock()
	return q.started("MPI_Igatherv", rc, false)
}

// ibcast copies root's n elements of t at buf into every rank's buf.
func (c communicator) ibcast(q *requests, buf unsafe.Pointer, n int, t dtype, root int) error {
	r := q.add()
	lock()
	rc := C.pc_ibcast(c.h, buf, C.int(n), t.c(), C.int(root), r)
	unlock()
	return q.started("MPI_Ibcast", rc, false)
}

// shim.h: the C side of the cgo boundary to MPI (mpi.go includes it).
// Open MPI's handles and constants are macros over addresses of its
// globals, and some calls take arguments cgo cannot write; these static
// functions give cgo plain C signatures.
#ifndef PIPECAST_MPI_SHIM_H
#define PIPECAST_MPI_SHIM_H

#include <stdlib.h>
#include <mpi.h>

// Open MPI's handles and constants are macros over addresses of its
// globals: cgo reaches them through these functions.
static MPI_Comm pc_comm_world(void) { return MPI_COMM_WORLD; }
static int pc_comm_is_null(MPI_Comm c) { return c == MPI_COMM_NULL; }
static MPI_Datatype pc_type(int t) {
	switch (t) {
	case 0: return MPI_FLOAT;
	case 1: return MPI_BYTE;
	default: return MPI_INT64_T;
	}
}

// A zero-count buffer may be NULL in Go; the library gets a valid
// address, another for receiving than for sending: Open MPI's
// non-blocking collectives (coll/libnbc) take a send buffer equal to the
// receive buffer for MPI_IN_PLACE, which on one rank only would hang the
// communicator's next collective.
static char pc_dummy_send[8], pc_dummy_recv[8];
static void *pc_buf(void *p) { return p ? p : pc_dummy_send; }
static void *pc_rbuf(void *p) { return p ? p : pc_dummy_recv; }

static int pc_init(int *provided) {
	return MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, provided);
}
static int pc_errors_return(MPI_Comm c) { return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); }
static int pc_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
	return MPI_Comm_split(c, color < 0 ? MPI_UNDEFINED : color, key, out);
}
static int pc_tag_ub(int *ub) {
	int *v, flag;
	int rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
	*ub = rc == MPI_SUCCESS && flag ? *v : 32767; // the standard's minimum
	return rc;
}
static int pc_iprobe(MPI_Comm c, int from, int tag, int t, int *found, int *count) {
	MPI_Status st;
	int rc = MPI_Iprobe(from, tag, c, found, &st);
	if (rc == MPI_SUCCESS && *found)
		rc = MPI_Get_count(&st, pc_type(t), count);
	return rc;
}
static int pc_improbe(MPI_Comm c, int from, int tag, int t, int *found, MPI_Message *m, int *count) {
	MPI_Status st;
	int rc = MPI_Improbe(from, tag, c, found, m, &st);
	if (rc == MPI_SUCCESS && *found)
		rc = MPI_Get_count(&st, pc_type(t), count);
	return rc;
}
// pc_isend and pc_imrecv start a transfer and test it at once, in one
// call: a small message is usually done by then. They return an MPI
// error code (> 0), pc_done, or MPI_SUCCESS for a pending request.
enum { pc_done = -1 };
static int pc_tested(int rc, MPI_Request *r) {
	int done = 0;
	if (rc == MPI_SUCCESS)
		rc = MPI_Test(r, &done, MPI_STATUS_IGNORE);
	return rc == MPI_SUCCESS && done ? pc_done : rc;
}
static int pc_isend(MPI_Comm c, void *buf, int n, int t, int to, int tag, MPI_Request *r) {
	return pc_tested(MPI_Isend(pc_buf(buf), n, pc_type(t), to, tag, c, r), r);
}
static int pc_imrecv(MPI_Message *m, void *buf, int n, int t, MPI_Request *r) {
	return pc_tested(MPI_Imrecv(pc_rbuf(buf), n, pc_type(t), m, r), r);
}
static int pc_iallgather(MPI_Comm c, void *send, int n, void *recv, MPI_Request *r) {
	return MPI_Iallgather(pc_buf(send), n, MPI_BYTE, pc_rbuf(recv), n, MPI_BYTE, c, r);
}
static int pc_ialltoallv(MPI_Comm c, void *send, int *scounts, int *sdispls, void *recv, int *rcounts, int *rdispls, int t, MPI_Request *r) {
	return MPI_Ialltoallv(pc_buf(send), scounts, sdispls, pc_type(t), pc_rbuf(recv), rcounts, rdispls, pc_type(t), c, r);
}
static int pc_igather(MPI_Comm c, void *send, int n, void *recv, int t, int root, MPI_Request *r) {
	return MPI_Igather(pc_buf(send), n, pc_type(t), pc_rbuf(recv), n, pc_type(t), root, c, r);
}
static int pc_igatherv(MPI_Comm c, void *send, int n, void *recv, int *counts, int *displs, int t, int root, MPI_Request *r) {
	return MPI_Igatherv(pc_buf(send), n, pc_type(t), pc_rbuf(recv), counts, displs, pc_type(t), root, c, r);
}
static int pc_ibcast(MPI_Comm c, void *buf, int n, int t, int root, MPI_Request *r) {
	return MPI_Ibcast(pc_buf(buf), n, pc_type(t), root, c, r);
}
static int pc_iallreduce_sum_in_place(MPI_Comm c, void *buf, int n, MPI_Request *r) {
	return MPI_Iallreduce(MPI_IN_PLACE, pc_rbuf(buf), n, MPI_FLOAT, MPI_SUM, c, r);
}
static int pc_testall(int n, MPI_Request *r, int *done) {
	return MPI_Testall(n, r, done, MPI_STATUSES_IGNORE);
}
static int pc_iallgatherv_in_place(MPI_Comm c, void *recv, int *counts, int *displs, int t, MPI_Request *r) {
	return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, pc_rbuf(recv), counts, displs, pc_type(t), c, r);
}

#endif

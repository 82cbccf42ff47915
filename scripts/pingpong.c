/*
 * pingpong.c: the reference for scripts/mpi-bench.sh. Two ranks bounce a
 * message with plain MPI_Send and MPI_Recv; for each size it prints
 *
 *     size_bytes one_way_microseconds megabytes_per_second
 *
 * where one way is half the median round trip and the bandwidth is the
 * size over one way (10^6 bytes per second). cmd/mpibench prints the
 * same over pipecast's MPI endpoint.
 *
 *     mpicc -O2 -o pingpong scripts/pingpong.c
 *     mpirun -np 2 ./pingpong [max_bytes]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* sizes are the message sizes measured, as in cmd/mpibench. */
static const long sizes[] = {8, 64, 512, 4096, 32768, 262144, 1L << 20, 4L << 20};
static const int nsizes = sizeof(sizes) / sizeof(sizes[0]);

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* rounds returns how many round trips to time at size bytes: many for
 * small messages, fewer for large ones, about the same total time. */
static int rounds(long size)
{
	long n = (64L << 20) / (size > 0 ? size : 1);
	if (n > 20000)
		n = 20000;
	if (n < 200)
		n = 200;
	return (int)n;
}

/* alloc returns memory for the message on transparent huge pages, as
 * pipecast's CPU tensors are (tensor/cpu/hugepage_linux.go), unless
 * PINGPONG_HUGEPAGES is "off" (PIPECAST_CPU_HUGEPAGES=off turns them off
 * for pipecast): the kernel's single copy between the processes
 * (process_vm_readv) costs much more on 4 KiB pages. */
static void *alloc(long bytes)
{
	const long huge = 2L << 20;
	long size = (bytes + huge - 1) / huge * huge;
	void *p = NULL;
	if (posix_memalign(&p, huge, size) != 0)
		return NULL;
	const char *env = getenv("PINGPONG_HUGEPAGES");
	if (!env || strcmp(env, "off") != 0)
		madvise(p, size, MADV_HUGEPAGE);
	return p;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "pingpong: needs exactly 2 ranks, got %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	long max = argc > 1 ? atol(argv[1]) : 4L << 20;
	float *buf = alloc(max > 0 ? max : 1);
	memset(buf, 1, max);
	double *rtt = malloc(sizeof(double) * 20000);
	int peer = 1 - rank;
	for (int k = 0; k < nsizes && sizes[k] <= max; k++) {
		long bytes = sizes[k];
		int count = (int)(bytes / sizeof(float));
		int n = rounds(bytes);
		for (int i = 0; i < n / 10 + 10; i++) { /* warm up */
			if (rank == 0) {
				MPI_Send(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD);
				MPI_Recv(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD);
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		for (int i = 0; i < n; i++) {
			double t0 = MPI_Wtime();
			if (rank == 0) {
				MPI_Send(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD);
				MPI_Recv(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else {
				MPI_Recv(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, count, MPI_FLOAT, peer, i, MPI_COMM_WORLD);
			}
			rtt[i] = MPI_Wtime() - t0;
		}
		if (rank == 0) {
			qsort(rtt, n, sizeof(double), cmp);
			double oneway = rtt[n / 2] / 2;
			printf("%ld %.3f %.1f\n", bytes, oneway * 1e6, bytes / oneway / 1e6);
			fflush(stdout);
		}
	}
	free(rtt);
	free(buf);
	MPI_Finalize();
	return 0;
}

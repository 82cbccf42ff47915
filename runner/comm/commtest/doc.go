// Package commtest is the test suite every transport of package comm
// passes: the same tests run on the in-process transport, one goroutine
// per rank, and on the MPI transport, one process per rank.
//
// The tests are SPMD: one test body runs on every rank with that rank's
// Group and Device, and the ranks meet at barriers, as the processes of
// an MPI job do. A transport provides a Harness, which starts a fresh
// group for each test (so that counters start at zero and nothing a
// failed test left behind reaches the next) and runs the body on its
// ranks:
//
//	func TestSuite(t *testing.T) {
//		commtest.Run(t, func(t *testing.T, body func(*commtest.Rank)) {
//			// start the ranks, and on each:
//			r := commtest.NewRank(t, group, device)
//			r.Do(body)
//			// then close the group and check what it reports
//		})
//	}
//
// Under MPI every process runs Run with its own rank only; the tests run
// in the same order everywhere, so every process takes part in each.
// The tests work for any number of ranks ≥ 2.
//
// Tensors cannot hold zero elements (tensor.Shape.Valid), so "size 0"
// is a nil contribution or destination of a collective, or an empty
// control message.
package commtest

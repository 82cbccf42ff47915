// Package comm owns the transport between devices: send and receive,
// all-gather and all-to-all, in-process by default. Every transfer is an
// explicit copy into the receiving device's memory, timed and counted in
// bytes, never hidden.
package comm

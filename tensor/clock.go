package tensor

import "time"

// epoch is the process-wide origin of Nanotime, so that events of all
// devices in one process share a time axis.
var epoch = time.Now()

// Nanotime returns monotonic nanoseconds since the process's epoch. It
// never goes backwards: it reads Go's monotonic clock, not the wall clock.
func Nanotime() int64 { return int64(time.Since(epoch)) }

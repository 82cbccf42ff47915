package profiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// tornEvents sizes the records the tearer cuts: about 20 KiB a line.
const tornEvents = 150

// tornRecord is the tearer's k-th record.
func tornRecord(k int) Record { return testRecord(fmt.Sprintf("torn-%05d", k), tornEvents) }

// tornRounds is how many times TestAppendConcurrentTornWrites runs its
// processes. Without Append's lock one round damages a line eight or nine times
// in ten on a 2-core machine; four rounds make a miss rare.
const tornRounds = 4

// TestAppendConcurrentTornWrites appends from several processes while
// another one keeps failing in the middle of its writes, as on a full
// disk. A failed write leaves a torn line, which is lost, but it must not
// take another process's record with it: an appender that checked the
// file's end before the torn write, or wrote one of its lines before it,
// would glue its next line to the torn one. Removing Append's lock makes
// this fail.
func TestAppendConcurrentTornWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and writes 130 MB")
	}
	const writers = 3
	for round := range tornRounds {
		path := filepath.Join(t.TempDir(), "runs.jsonl")
		// The tearer runs until its standard input closes.
		stopRead, stopTearer, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		tearer := startAppender(t, roleTearer, path, 0, stopRead)
		stopRead.Close()
		procs := make([]*appender, writers)
		for w := range procs {
			procs[w] = startAppender(t, roleWriter, path, w, nil)
		}
		for w, p := range procs {
			p.wait(t, "writer "+strconv.Itoa(w))
		}
		stopTearer.Close()
		tearer.wait(t, "tearer")
		if t.Failed() {
			return
		}
		// A torn write misses at least its last 64 bytes, so no torn
		// record reads back whole.
		bad := checkAppended(t, path, writerRecords(writers))
		if len(bad) == 0 {
			t.Errorf("round %d: no truncated line: the tearer cut no write, so this proves nothing", round)
		}
		if t.Failed() {
			t.Fatalf("round %d of %d failed", round, tornRounds)
		}
		t.Logf("round %d: %d torn lines among the writers' %d records", round, len(bad), len(writerRecords(writers)))
	}
}

// tearAppends calls Append until stop closes, each time with the file
// size limit (RLIMIT_FSIZE) of the process 64 bytes short of the line's
// end if written at the file's present end: the kernel writes the part of
// the line below the limit and fails the rest with EFBIG (the Go runtime
// ignores SIGXFSZ), which is what a full disk does. Other appenders that
// grow the file in between shorten the part; if they grow it by a line or
// more, nothing is written.
func tearAppends(t *testing.T, path string, stop <-chan struct{}) {
	var unlimited unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &unlimited); err != nil {
		t.Fatal(err)
	}
	cut := int64(len(marshalLine(t, tornRecord(0))) - 64)
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		var size int64
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		limit := unlimited
		limit.Cur = uint64(size + cut)
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &limit); err != nil {
			t.Fatal(err)
		}
		err := Append(path, tornRecord(k))
		if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &unlimited); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(err, syscall.EFBIG) {
			t.Fatalf("Append beyond the file size limit: %v, want EFBIG", err)
		}
	}
}

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pipecast/pipecast/profiler"
)

// writeAtomically writes path through write: into a temporary file in
// the same directory, renamed to path only once everything is written
// and synced, so that path holds either its old content or the new one
// and a failed export never leaves half a file. Its own errors name the
// path; write's are returned as they are.
func writeAtomically(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file private; the result is an ordinary
	// file, as os.Create would make it under the usual umask.
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// checkOutputFiles checks, before any work, that every file a command
// was asked to write can be written: given as flag name and path pairs
// (an empty path is not asked for), each must not be a directory, and
// its directory must exist and take a new file (probed with a temporary
// one, removed at once). It returns a usage error naming the flag.
func checkOutputFiles(flagPaths ...string) error {
	for i := 0; i+1 < len(flagPaths); i += 2 {
		flag, path := flagPaths[i], flagPaths[i+1]
		if path == "" {
			continue
		}
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return usageErrorf("--%s %s: a directory; give a file name", flag, path)
		}
		dir := filepath.Dir(path)
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return usageErrorf("--%s %s: directory %s: %v", flag, path, dir, errors.Unwrap(err))
		case !fi.IsDir():
			return usageErrorf("--%s %s: %s is not a directory", flag, path, dir)
		}
		f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.probe")
		if err != nil {
			return usageErrorf("--%s %s: cannot write in %s: %v", flag, path, dir, errors.Unwrap(err))
		}
		f.Close()
		os.Remove(f.Name())
	}
	return nil
}

// checkDatasetDir checks, before any work, that the directory --flag
// names can take its runs.jsonl: dir, where it exists, must be a
// directory whose runs.jsonl is not one; where it does not, it is made
// at the first record, so its nearest existing ancestor must be a
// directory that takes a new entry (probed with a temporary file,
// removed at once). It returns a usage error naming the flag.
func checkDatasetDir(flag, dir string) error {
	if dir == "" {
		return nil
	}
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return usageErrorf("--%s %s: not a directory; give the directory its runs.jsonl goes in", flag, dir)
		}
		runs := filepath.Join(dir, "runs.jsonl")
		if fi, err := os.Stat(runs); err == nil && fi.IsDir() {
			return usageErrorf("--%s %s: %s is a directory, not a dataset", flag, dir, runs)
		}
		return checkOutputFiles(flag, runs)
	}
	parent := filepath.Clean(dir)
	for {
		next := filepath.Dir(parent)
		if next == parent {
			break
		}
		parent = next
		if fi, err := os.Stat(parent); err == nil {
			if !fi.IsDir() {
				return usageErrorf("--%s %s: %s is not a directory", flag, dir, parent)
			}
			break
		}
	}
	f, err := os.CreateTemp(parent, ".pipecast-out.*.probe")
	if err != nil {
		return usageErrorf("--%s %s: cannot create it in %s: %v", flag, dir, parent, errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// checkInputFiles checks, before any work, that the files flag names can
// be read: each must exist, open for reading and not be a directory. It
// returns a usage error naming the flag and the file.
func checkInputFiles(flag string, paths ...string) error {
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return usageErrorf("--%s %s: %v", flag, path, errors.Unwrap(err))
		}
		fi, err := f.Stat()
		f.Close()
		if err == nil && fi.IsDir() {
			return usageErrorf("--%s %s: a directory; give a file name", flag, path)
		}
	}
	return nil
}

// maxSkipNotes is how many skipped lines of one file readRecords names
// before it counts the rest.
const maxSkipNotes = 3

// readRecords reads the run records of path, skipping lines that hold
// none: it names the first maxSkipNotes on errOut and counts the others,
// so that a file that is not a runs.jsonl at all does not flood the
// terminal. Its error (an unreadable file) names the path.
func readRecords(errOut io.Writer, path string) ([]profiler.Record, error) {
	recs, bad, err := profiler.ReadFile(path, profiler.ReadOptions{SkipBad: true})
	for i := range bad[:min(len(bad), maxSkipNotes)] {
		fmt.Fprintf(errOut, "pipecast: %v (skipped)\n", &bad[i])
	}
	if n := len(bad) - maxSkipNotes; n > 0 {
		fmt.Fprintf(errOut, "pipecast: %s: %d more lines that hold no run record (skipped)\n", path, n)
	}
	return recs, err
}

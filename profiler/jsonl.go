package profiler

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// A dataset of run records is a JSON Lines file: one record per line,
// UTF-8, each line a complete JSON object ending in '\n'. Lines are
// appended, never rewritten, so a dataset grows across sweeps and
// machines and can be concatenated with cat.

// ErrTruncated marks a line that ends in the middle of a JSON value: what
// a crash or a full disk leaves of an interrupted Append. Readers report
// such lines and skip them, because losing the record being written is
// the documented outcome of a crash, not damage to the dataset.
var ErrTruncated = errors.New("truncated record (an interrupted write)")

// ReadOptions controls how Read treats bad lines.
type ReadOptions struct {
	// SkipBad reports lines that do not hold a valid record and goes
	// on; without it the first such line is an error. Truncated lines
	// are reported and skipped either way.
	SkipBad bool
}

// LineError is a line of a dataset that does not hold a valid record.
type LineError struct {
	Path string
	Line int // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

// Unwrap returns the cause, so that errors.Is(err, ErrTruncated) and
// errors.As(err, new(*SchemaVersionError)) see through a LineError.
func (e *LineError) Unwrap() error { return e.Err }

// appendMu serialises the appends of one process; lockAppend serialises
// those of several processes where the system has flock.
var appendMu sync.Mutex

// Append validates recs and appends them to the dataset at path, one line
// each, creating the file and its directories as needed; the file is
// synced before Append returns. Nothing is written if a record is
// invalid.
//
// Every line is written with a single write to a file opened with
// O_APPEND, which on local file systems puts it whole at the end of the
// file even when other processes append at the same time, lines of many
// MiB included. A write can still stop short (a crash, a full disk), and a torn
// line at the end of the file would glue the next line to it. Append
// therefore holds an advisory lock on the file (flock, where the system
// and the file system have it) while it checks the file's last byte,
// ends a line a failed write left unfinished, and writes its lines: an
// appender in another process cannot write between the check and the
// writes, and a torn line is ended before anything follows it. Only the
// record being written when a write fails is lost; readers skip its
// truncated line. The lock is released before the sync, and by the
// system if the process dies.
func Append(path string, recs ...Record) error {
	lines := make([][]byte, len(recs))
	for i := range recs {
		if err := recs[i].Validate(); err != nil {
			return fmt.Errorf("append run record %d (%s) to %s: %w", i, recs[i].ID, path, err)
		}
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("append run record %d (%s) to %s: %w", i, recs[i].ID, path, err)
		}
		// encoding/json escapes control characters inside strings, so
		// the only newline of a line is the one added here.
		lines[i] = append(b, '\n')
	}

	appendMu.Lock()
	defer appendMu.Unlock()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("append run records: %w", err)
	}
	_, statErr := os.Stat(path)
	created := errors.Is(statErr, fs.ErrNotExist)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append run records: %w", err)
	}
	if err := writeLines(f, lines); err != nil {
		f.Close()
		return fmt.Errorf("append run records to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("append run records to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append run records to %s: %w", path, err)
	}
	if created {
		// The new file's directory entry must reach the disk too, or a
		// crash could lose the whole file. Some systems cannot sync a
		// directory; the records themselves are already synced.
		if d, err := os.Open(dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

// writeLines ends a dangling last line of f and writes lines, holding
// the file's lock.
func writeLines(f *os.File, lines [][]byte) error {
	unlock, err := lockAppend(f)
	if err != nil {
		return err
	}
	defer unlock()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if size := fi.Size(); size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return fmt.Errorf("read last byte: %w", err)
		}
		if last[0] != '\n' {
			// Without a lock, an appender in another process may end
			// it too, leaving an empty line, which readers ignore.
			if _, err := f.Write([]byte{'\n'}); err != nil {
				return err
			}
		}
	}
	for _, line := range lines {
		if _, err := f.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile reads the dataset at path; see Read.
func ReadFile(path string, opts ReadOptions) ([]Record, []LineError, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read run records: %w", err)
	}
	defer f.Close()
	return Read(f, path, opts)
}

// Read reads a dataset of run records from r; name stands for r in
// messages. It returns the valid records in file order and the bad lines
// it skipped. Blank lines are ignored. Unknown fields are ignored, so
// that a field added to a later release of the same schema version does
// not stop older readers; a record of another schema version is a bad
// line (a *SchemaVersionError). Lines that end inside a JSON value
// (ErrTruncated) are always skipped; other bad lines are skipped with
// opts.SkipBad and otherwise end the read with the *LineError, returned
// as the error and no records. Lines may be of any length.
func Read(r io.Reader, name string, opts ReadOptions) ([]Record, []LineError, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var (
		recs []Record
		bad  []LineError
	)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, bad, fmt.Errorf("read run records %s:%d: %w", name, line, err)
		}
		eof := err != nil
		if len(bytes.TrimSpace(b)) > 0 {
			// ReadBytes stops short of a newline only at the end.
			rec, derr := decodeLine(b, eof)
			switch {
			case derr == nil:
				recs = append(recs, rec)
			case errors.Is(derr, ErrTruncated) || opts.SkipBad:
				bad = append(bad, LineError{Path: name, Line: line, Err: derr})
			default:
				le := LineError{Path: name, Line: line, Err: derr}
				return nil, append(bad, le), &le
			}
		}
		if eof {
			return recs, bad, nil
		}
	}
}

// decodeLine decodes and validates one line. A final line that lacks its
// newline and does not decode is truncated, whatever the JSON error: a
// write stopped short can end anywhere.
func decodeLine(b []byte, unterminated bool) (Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		if unterminated || truncatedJSON(b) {
			return Record{}, ErrTruncated
		}
		// A record of a later version may have changed a field's type;
		// its version, when readable, explains the failure better.
		var head struct {
			Schema int `json:"schema"`
		}
		if json.Unmarshal(b, &head) == nil && head.Schema != SchemaVersion && head.Schema != 0 {
			return Record{}, &SchemaVersionError{Version: head.Schema}
		}
		return Record{}, fmt.Errorf("invalid run record: %w", err)
	}
	if err := rec.Validate(); err != nil {
		var sv *SchemaVersionError
		if errors.As(err, &sv) {
			return Record{}, err
		}
		return Record{}, fmt.Errorf("invalid run record %s: %w", rec.ID, err)
	}
	return rec, nil
}

// truncatedJSON reports whether b is the beginning of a JSON value that
// ends early: the decoder runs out of input inside the value rather than
// meeting a character that cannot be JSON.
func truncatedJSON(b []byte) bool {
	// The line's own end is no part of the value: a write cut inside a
	// string and ended by a later Append must read as cut, not as a
	// string holding a raw newline.
	b = bytes.TrimRight(b, "\r\n")
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}

package datasets

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOpenText(t *testing.T) {
	const data = "abcdefghij" // 10 bytes
	path := writeFile(t, filepath.Join(t.TempDir(), "t.txt"), []byte(data))
	tests := []struct {
		name    string
		seq     int
		windows []string // each sample's bytes and the one after them
	}{
		{"one byte", 1, []string{"ab", "bc", "cd", "de", "ef", "fg", "gh", "hi", "ij"}},
		{"stride 3, tail left out", 3, []string{"abcd", "defg", "ghij"}},
		{"stride 4, tail left out", 4, []string{"abcde", "efghi"}},
		{"the whole file", 9, []string{"abcdefghij"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := OpenText(path, tc.seq)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Name() != "text:"+path || ds.Classes() != 256 || ds.LabelsPerSample() != tc.seq ||
				!ds.Shape().Equal([]int{tc.seq}) || ds.Len() != len(tc.windows) {
				t.Fatalf("%s: %d samples of %v, %d labels each, %d classes; want %d of [%d], %d, 256",
					ds.Name(), ds.Len(), ds.Shape(), ds.LabelsPerSample(), ds.Classes(), len(tc.windows), tc.seq, tc.seq)
			}
			x, labels := readAll(t, ds, span(0, ds.Len()))
			for i, w := range tc.windows {
				var wantX []float32
				var wantL []int32
				for p := range tc.seq {
					wantX = append(wantX, float32(w[p]))
					wantL = append(wantL, int32(w[p+1]))
				}
				s := tc.seq
				if !slices.Equal(x[i*s:(i+1)*s], wantX) || !slices.Equal(labels[i*s:(i+1)*s], wantL) {
					t.Errorf("sample %d: values %v, labels %v; want %v, %v (%q)", i, x[i*s:(i+1)*s], labels[i*s:(i+1)*s], wantX, wantL, w)
				}
			}
		})
	}
}

func TestOpenTextErrors(t *testing.T) {
	dir := t.TempDir()
	short := writeFile(t, filepath.Join(dir, "short"), []byte("abcd"))
	tests := []struct {
		name, path string
		seq        int
		want       string
	}{
		{"missing", filepath.Join(dir, "missing"), 4, "no such file"},
		{"a directory", dir, 4, "is a directory"},
		{"empty", writeFile(t, filepath.Join(dir, "empty"), nil), 1, "0 bytes, fewer than the 2"},
		{"one byte short", short, 4, short + ": 4 bytes, fewer than the 5 a sequence of 4 tokens and its last label need"},
		{"no tokens", short, 0, "need at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenText(tc.path, tc.seq)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTextLicense reads a plain-text file every Debian system has
// (base-files ships the licenses), as the test of a loss that falls on
// real text does; it skips where the file is absent.
func TestTextLicense(t *testing.T) {
	const path = "/usr/share/common-licenses/GPL-3"
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	ds, err := Open("text:"+path, Input{Shape: []int{64}, Classes: 50257, Tokens: true}, 1)
	if err != nil {
		t.Fatal(err)
	}
	x, labels := readAll(t, ds, []int{0})
	if got := string(bytesOf(x)); !strings.Contains(got, "GNU GENERAL PUBLIC LICENSE") {
		t.Errorf("first sample %q, want the license's title", got)
	}
	if labels[0] != int32(x[1]) {
		t.Errorf("first label %d, want the second byte %v", labels[0], x[1])
	}
}

// bytesOf returns the byte tokens x holds.
func bytesOf(x []float32) []byte {
	b := make([]byte, len(x))
	for i, v := range x {
		b[i] = byte(v)
	}
	return b
}

// FuzzParseText checks that any bytes at any sequence length make a set
// that keeps OpenText's promises, or an error that names the file: every
// byte but the first is a label of exactly one position, in order, and a
// sample's values are the bytes before its labels.
func FuzzParseText(f *testing.F) {
	f.Add([]byte("hello, world"), 3)
	f.Add([]byte("ab"), 1)
	f.Add([]byte("ab"), 2)
	f.Add([]byte{}, 1)
	f.Add([]byte{0, 255, 128}, 2)
	f.Add([]byte("x"), 0)
	f.Add([]byte("xyz"), -1)
	f.Fuzz(func(t *testing.T, data []byte, seq int) {
		seq = min(seq, 1<<12) // a file's worth of windows, not a huge buffer
		ds, err := parseText("fuzz.txt", data, seq)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.txt") {
				t.Fatalf("error %q does not name the file", err)
			}
			if seq >= 1 && len(data) > seq {
				t.Fatalf("%d bytes at %d tokens refused: %v", len(data), seq, err)
			}
			return
		}
		if seq < 1 || len(data) <= seq {
			t.Fatalf("%d bytes at %d tokens accepted", len(data), seq)
		}
		n := ds.Len()
		if n != (len(data)-1)/seq || n < 1 {
			t.Fatalf("%d samples from %d bytes at %d tokens", n, len(data), seq)
		}
		x, labels := readAll(t, ds, span(0, n))
		if want := data[1 : n*seq+1]; !slices.Equal(labelBytes(labels), want) {
			t.Fatalf("labels %v, want the bytes after the first, %v", labels, want)
		}
		for i := range n {
			for p := range seq {
				if got, want := x[i*seq+p], float32(data[i*seq+p]); got != want {
					t.Fatalf("sample %d position %d: %v, want %v", i, p, got, want)
				}
			}
		}
	})
}

// labelBytes returns labels as bytes.
func labelBytes(labels []int32) []byte {
	b := make([]byte, len(labels))
	for i, l := range labels {
		b[i] = byte(l)
	}
	return b
}

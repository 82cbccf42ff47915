package datasets

import (
	"fmt"
	"os"

	"github.com/pipecast/pipecast/tensor"
)

// byteVocab is the vocabulary of byte-level tokens: one token a byte
// value.
const byteVocab = 256

// text is the set OpenText returns: a file's bytes in memory, cut into
// overlapping windows.
type text struct {
	name string
	data []byte
	seq  int
}

// OpenText reads the file at path into memory as byte-level tokens (a
// vocabulary of 256, one token a byte value, whatever the file holds) and
// cuts it into sequences of seq tokens for next-token prediction: sample
// i is bytes [i·seq, i·seq+seq) and its labels the bytes one further on,
// [i·seq+1, i·seq+seq+1). Windows of seq+1 bytes at stride seq, so every
// byte but the first is a label exactly once; a tail too short for a
// whole window is left out. A file shorter than seq+1 bytes holds no
// sample and is refused.
func OpenText(path string, seq int) (Dataset, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("open text: %w", err)
	}
	return parseText("text:"+path, data, seq)
}

// parseText returns the set of data's bytes in sequences of seq tokens,
// named name.
func parseText(name string, data []byte, seq int) (Dataset, error) {
	if seq < 1 {
		return nil, fmt.Errorf("%s: sequences of %d tokens: need at least 1", name, seq)
	}
	if len(data) <= seq {
		return nil, fmt.Errorf("%s: %d bytes, fewer than the %d a sequence of %d tokens and its last label need", name, len(data), seq+1, seq)
	}
	return &text{name: name, data: data, seq: seq}, nil
}

// Name returns "text:" and the file's path.
func (t *text) Name() string { return t.name }

// Len returns the number of whole windows of seq+1 bytes at stride seq.
func (t *text) Len() int { return (len(t.data) - 1) / t.seq }

// Shape returns [seq].
func (t *text) Shape() tensor.Shape { return tensor.Shape{t.seq} }

// Classes returns 256, one class a byte value.
func (t *text) Classes() int { return byteVocab }

// LabelsPerSample returns seq: one label a position.
func (t *text) LabelsPerSample() int { return t.seq }

// Read copies sequences indices[i] into x and their next bytes into
// labels.
func (t *text) Read(indices []int, x []float32, labels []int32) error {
	if err := checkReadArgs(t, indices, x, labels); err != nil {
		return err
	}
	for i, idx := range indices {
		window := t.data[idx*t.seq : idx*t.seq+t.seq+1]
		xs, ls := x[i*t.seq:(i+1)*t.seq], labels[i*t.seq:(i+1)*t.seq]
		for p := range xs {
			xs[p], ls[p] = float32(window[p]), int32(window[p+1])
		}
	}
	return nil
}

package datasets

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// MaxVocab is the largest vocabulary a set of token sequences holds:
// token ids travel as float32 values, which hold every whole number up to
// 2^24 exactly.
const MaxVocab = 1 << 24

// domainTokens keeps the stream of synthetic token ids apart from the
// synthetic images' streams, which share the seed.
const domainTokens uint64 = 0x70cc5e9a11d0b17e

// syntheticTokens is the set SyntheticTokens returns; it is immutable, so
// Read is safe for concurrent use.
type syntheticTokens struct {
	seq, vocab, samples int
	seed                uint64
}

// SyntheticTokens returns a deterministic set of samples token sequences
// of seq tokens from a vocabulary of vocab, for next-token prediction:
// sample i draws seq+1 ids uniformly from [0, vocab) with a generator
// seeded by (seed, i); its values are the first seq ids (as float32, exact
// whole numbers) and its seq labels the last seq, each position labelled
// with the token that follows it. Ids are a pure function of (seed, i),
// computed when read, as Synthetic's samples are. Uniform ids carry no
// pattern: a model learns their distribution, a loss of ln(vocab), and no
// more.
//
// SyntheticTokens panics if seq, vocab or samples is not positive or
// vocab exceeds MaxVocab.
func SyntheticTokens(seq, vocab, samples int, seed uint64) Dataset {
	if seq <= 0 || vocab <= 0 || vocab > MaxVocab || samples <= 0 {
		panic(fmt.Sprintf("datasets: synthetic set of %d sequences of %d tokens from a vocabulary of %d", samples, seq, vocab))
	}
	return &syntheticTokens{seq: seq, vocab: vocab, samples: samples, seed: seed}
}

// Name returns "synthetic".
func (s *syntheticTokens) Name() string { return "synthetic" }

// Len returns the number of sequences.
func (s *syntheticTokens) Len() int { return s.samples }

// Shape returns [seq].
func (s *syntheticTokens) Shape() tensor.Shape { return tensor.Shape{s.seq} }

// Classes returns the vocabulary size.
func (s *syntheticTokens) Classes() int { return s.vocab }

// LabelsPerSample returns seq: one label a position.
func (s *syntheticTokens) LabelsPerSample() int { return s.seq }

// Read generates sequences indices[i] into x and their labels.
func (s *syntheticTokens) Read(indices []int, x []float32, labels []int32) error {
	if err := checkReadArgs(s, indices, x, labels); err != nil {
		return err
	}
	for i, idx := range indices {
		rng := newSplitMix(s.seed, domainTokens, uint64(idx))
		xs, ls := x[i*s.seq:(i+1)*s.seq], labels[i*s.seq:(i+1)*s.seq]
		prev := rng.intn(s.vocab)
		for p := range xs {
			next := rng.intn(s.vocab)
			xs[p], ls[p] = float32(prev), int32(next)
			prev = next
		}
	}
	return nil
}

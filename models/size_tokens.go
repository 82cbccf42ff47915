package models

import "fmt"

// TokenSize is a language model family's defaults of the size fields
// that only language models take, as its Hugging Face config.json gives
// them (GPT-2: n_positions, vocab_size, n_layer), and the longest
// sequence it takes. Width scales the hidden size as it scales a CNN's
// channels.
type TokenSize struct {
	// Seq is the default sequence length, in tokens.
	Seq int
	// Vocab is the default vocabulary size.
	Vocab int
	// Layers is the default number of decoder layers.
	Layers int
	// MaxSeq is the longest sequence the model takes: the number of its
	// learned position embeddings (GPT-2's n_positions); 0 when it takes
	// any length (rotary positions).
	MaxSeq int
}

// resolveTokens fills a language model's Seq, Vocab and Layers with its
// family's defaults where c leaves them 0 and makes its classes its
// vocabulary; for any other model it clears them, since it ignores them.
// It runs before the family's own defaults, which see them filled.
func (a Arch) resolveTokens(c Config) Config {
	t := a.Tokens
	if t == nil {
		c.Seq, c.Vocab, c.Layers = 0, 0, 0
		return c
	}
	if c.Seq == 0 {
		c.Seq = t.Seq
	}
	if c.Vocab == 0 {
		c.Vocab = t.Vocab
	}
	if c.Layers == 0 {
		c.Layers = t.Layers
	}
	c.Image = 0
	c.Classes = c.Vocab
	return c
}

// checkTokens says why a language model cannot be built at the resolved
// size c: a field that is not positive, a sequence longer than it takes.
// It is nil for any other model.
func (a Arch) checkTokens(c Config) error {
	t := a.Tokens
	if t == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"sequence length", c.Seq}, {"vocabulary", c.Vocab}, {"layers", c.Layers}} {
		if f.v < 1 {
			return fmt.Errorf("%s %d: need at least 1", f.name, f.v)
		}
	}
	if t.MaxSeq > 0 && c.Seq > t.MaxSeq {
		return fmt.Errorf("sequence length %d is longer than the model takes, %d", c.Seq, t.MaxSeq)
	}
	return nil
}

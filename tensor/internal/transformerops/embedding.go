package transformerops

import "fmt"

// Row returns the table row of token id in a vocabulary of v tokens,
// panicking unless id is a whole number in [0, v): a programming error
// (the tokenizer's vocabulary and the model's disagree). NaN fails the
// test as well, since it equals no whole number.
func Row(id float32, v int) int {
	k := int(id)
	if float32(k) != id || k < 0 || k >= v {
		panic(fmt.Sprintf("transformerops: embedding: token id %v outside [0, %d)", id, v))
	}
	return k
}

// CheckIDs panics, as Row does, unless every id is a row of a table of v
// tokens. A kernel that shares ids out over threads checks them all
// first, so that a bad id panics before any row is written.
func CheckIDs(ids []float32, v int) {
	for _, id := range ids {
		Row(id, v)
	}
}

// EmbeddingForward sets y[i, :] = table[ids[i], :], rows of d values.
func EmbeddingForward(ids, table, y []float32, d int) {
	v := len(table) / d
	for i, id := range ids {
		k := Row(id, v)
		copy(y[i*d:(i+1)*d], table[k*d:(k+1)*d])
	}
}

// EmbeddingBackward accumulates dtable[ids[i], lo:hi] += dy[i, lo:hi]
// over every i, for the columns [lo, hi) of rows of d values: sharing
// the columns out, rather than the tokens, lets threads accumulate a
// repeated token's rows without contending for them, and every column
// sums its tokens in one order whatever the split. The sums are float32,
// as the gradient they add into is: each repeat of a token rounds once.
func EmbeddingBackward(ids, dy, dtable []float32, d, lo, hi int) {
	v := len(dtable) / d
	for i, id := range ids {
		k := Row(id, v)
		dst := dtable[k*d+lo : k*d+hi]
		src := dy[i*d+lo : i*d+hi]
		for j, g := range src {
			dst[j] += g
		}
	}
}

package models

// InputError is what a layer panics with when its input is one the
// layer cannot take by its definition rather than by a bug: a batch norm
// in training given one value per channel, as torch refuses it too. The
// runner reports it as the reason a configuration cannot run, without
// calling it a panic.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// Package schedule owns the schedule programs: pure functions that turn a
// device count K, a micro-batch count M and schedule options into a
// program, the ordered operations of every device, for the single-device,
// GPipe, cooperative, 1F1B, interleaved 1F1B (v model chunks per device)
// and zero-bubble (ZB-H1, ZB-H2: backwards split into an input-gradient
// and a weight-gradient half) schedules; and the checks that a program
// cannot deadlock, that its sends and receives match and that it keeps
// its memory promise. It executes nothing: the runner runs programs and
// the predictor simulates them.
package schedule

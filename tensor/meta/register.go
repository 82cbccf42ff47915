package meta

import "github.com/pipecast/pipecast/tensor"

// BackendName is the name the meta backend registers under.
const BackendName = tensor.MetaBackend

// The registration lets the runner train on meta devices: one step then
// yields a configuration's exact memory accounting without computing
// anything.
func init() {
	tensor.Register(tensor.Backend{
		Name:        BackendName,
		Description: "no storage and no compute: shapes, memory accounting and MAC counts only",
		Open: func(o tensor.Options) (tensor.Device, error) {
			return newDevice(o.Index, o.Threads), nil
		},
	})
}
